#include "kernels/cpu/relu.h"

#include <algorithm>
#include <cassert>

#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

DEVMAP_INLINE void relu_range_body(const float* x, float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) y[i] = std::max(x[i], 0.0f);
}
DEVMAP_CPU_PATH_DISPATCH(void, relu_range, (const float* x, float* y, int64_t begin, int64_t end), (x, y, begin, end))

DEVMAP_INLINE void relu_grad_range_body(const float* y, const float* dy, float* dx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float g = dy[i];  // read unconditionally, so the select compiles branch-free
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  }
}
DEVMAP_CPU_PATH_DISPATCH(void, relu_grad_range,
                         (const float* y, const float* dy, float* dx, int64_t begin, int64_t end),
                         (y, dy, dx, begin, end))

}  // namespace

void relu_in_place(float* y, int64_t n) {
  relu_range(y, y, 0, n);
}

std::string ReluKernel::implementation(const Node& /*node*/) const {
  return path_kernel_name("relu");
}

void ReluKernel::forward(const ForwardArgs& args) {
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  parallel_for_elements(args.ctx.pool, args.output.numel(),
                        [&](int64_t begin, int64_t end) { relu_range(x, y, begin, end); });
}

void ReluKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const float* y = args.output.data;
  const float* dy = args.d_output.data;
  assert(y != nullptr && "relu keeps its output for backward");
  parallel_for_elements(args.ctx.pool, args.d_output.numel(),
                        [&](int64_t begin, int64_t end) { relu_grad_range(y, dy, dx, begin, end); });
}

}  // namespace devmap::cpu
