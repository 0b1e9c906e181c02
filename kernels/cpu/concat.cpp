#include "kernels/cpu/concat.h"

#include <cstring>

#include "kernels/cpu/parallel.h"

namespace devmap::cpu {

void ConcatKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.output.shape[0], out_sample = args.node.out_shape.numel();
  float* y = args.output.data;
  parallel_for_rows(args.ctx.pool, batch, out_sample, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      int64_t offset = 0;
      for (size_t i = 0; i < args.inputs.size(); ++i) {
        const int64_t len = args.node.input_shapes[i].numel();
        std::memcpy(y + n * out_sample + offset, args.inputs[i].data + n * len,
                    static_cast<size_t>(len) * sizeof(float));
        offset += len;
      }
    }
  });
}

void ConcatKernel::backward(const BackwardArgs& args) {
  const int64_t batch = args.d_output.shape[0], out_sample = args.node.out_shape.numel();
  const float* dy = args.d_output.data;
  parallel_for_rows(args.ctx.pool, batch, out_sample, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      int64_t offset = 0;
      for (size_t i = 0; i < args.d_inputs.size(); ++i) {
        const int64_t len = args.node.input_shapes[i].numel();
        if (args.d_inputs[i].data != nullptr)
          std::memcpy(args.d_inputs[i].data + n * len, dy + n * out_sample + offset,
                      static_cast<size_t>(len) * sizeof(float));
        offset += len;
      }
    }
  });
}

}  // namespace devmap::cpu
