#include "kernels/cpu/dense.h"

#include <cstring>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {

void DenseKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], in = args.inputs[0].shape[1], units = args.output.shape[1];
  const float* bias = args.params.size() > 1 ? args.params[1].data : nullptr;
  float* y = args.output.data;
  if (bias != nullptr) {
    parallel_for(args.ctx.pool, batch, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n)
        std::memcpy(y + n * units, bias, static_cast<size_t>(units) * sizeof(float));
    });
  }
  sgemm(false, true, batch, units, in, args.inputs[0].data, in, args.params[0].data, in, bias ? 1.0f : 0.0f, y, units);
}

void DenseKernel::backward(const BackwardArgs& args) {
  const int64_t batch = args.d_output.shape[0], units = args.d_output.shape[1];
  const int64_t in = args.node.input_shapes[0][0];
  const float* dy = args.d_output.data;
  const float beta = args.accumulate ? 1.0f : 0.0f;

  if (float* dx = args.d_inputs[0].data)
    sgemm(false, false, batch, in, units, dy, units, args.params[0].data, in, 0.0f, dx, in);
  if (float* dw = args.d_params[0].data)
    sgemm(true, false, units, in, batch, dy, units, args.inputs[0].data, in, beta, dw, in);
  if (args.d_params.size() > 1 && args.d_params[1].data != nullptr) {
    float* db = args.d_params[1].data;
    // One unit per task; samples summed in order.
    parallel_for(args.ctx.pool, units, [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        double sum = 0.0;
        for (int64_t n = 0; n < batch; ++n) sum += dy[n * units + u];
        db[u] = args.accumulate ? db[u] + static_cast<float>(sum) : static_cast<float>(sum);
      }
    });
  }
}

}  // namespace devmap::cpu
