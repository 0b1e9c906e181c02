#include "kernels/cpu/relu.h"

#include <algorithm>
#include <cassert>

#include "kernels/cpu/parallel.h"

namespace devmap::cpu {

void ReluKernel::forward(const ForwardArgs& args) {
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  parallel_for_elements(args.ctx.pool, args.output.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = std::max(x[i], 0.0f);
  });
}

void ReluKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const float* y = args.output.data;
  const float* dy = args.d_output.data;
  assert(y != nullptr && "relu keeps its output for backward");
  parallel_for_elements(args.ctx.pool, args.d_output.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = dy[i];  // read unconditionally, so the select compiles branch-free
      dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
  });
}

}  // namespace devmap::cpu
