#include "kernels/cpu/global_avg_pool.h"

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/reduce.h"

namespace devmap::cpu {

void GlobalAvgPoolKernel::forward(const ForwardArgs& args) {
  const Shape& in = args.node.input_shapes[0];
  const int64_t planes = args.inputs[0].shape[0] * in[0], area = in[1] * in[2];
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  parallel_for(args.ctx.pool, planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl)
      y[pl] = static_cast<float>(sum_fixed_order(x + pl * area, area) / static_cast<double>(area));
  });
}

void GlobalAvgPoolKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const Shape& in = args.node.input_shapes[0];
  const int64_t planes = args.d_output.shape[0] * in[0], area = in[1] * in[2];
  const float* dy = args.d_output.data;
  const float scale = static_cast<float>(area);
  parallel_for(args.ctx.pool, planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const float v = dy[pl] / scale;
      float* d = dx + pl * area;
      for (int64_t i = 0; i < area; ++i) d[i] = v;
    }
  });
}

}  // namespace devmap::cpu
