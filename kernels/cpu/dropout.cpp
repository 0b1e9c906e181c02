#include "kernels/cpu/dropout.h"

#include <cassert>
#include <cstring>

#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

// y = x, unless they are the same memory.
void copy(const float* src, float* dst, int64_t n) {
  if (src != dst) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace

DropoutMask::DropoutMask(const Node& node, const KernelContext& ctx)
    : key_(philox_key(ctx.seed, node.name)),
      c2_(static_cast<uint32_t>(static_cast<uint64_t>(ctx.step))),
      c3_(static_cast<uint32_t>(static_cast<uint64_t>(ctx.step) >> 32)),
      first_(static_cast<uint64_t>(ctx.sample_offset) * static_cast<uint64_t>(node.out_shape.numel())),
      rate_(static_cast<float>(node.attrs.get_float("rate"))),
      scale_(static_cast<float>(1.0 / (1.0 - node.attrs.get_float("rate")))) {
  assert(ctx.sample_offset >= 0 && ctx.step >= 0);
}

void DropoutKernel::forward(const ForwardArgs& args) {
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  const int64_t n = args.output.numel();
  if (!args.ctx.training) {
    copy(x, y, n);
    return;
  }
  const DropoutMask mask(args.node, args.ctx);
  const float scale = mask.scale();
  parallel_for_elements(args.ctx.pool, n, [&](int64_t begin, int64_t end) {
    mask.for_each(begin, end, [&](int64_t j, bool keep) { y[j] = keep ? x[j] * scale : 0.0f; });
  });
}

void DropoutKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const float* dy = args.d_output.data;
  const int64_t n = args.d_output.numel();
  if (!args.ctx.training) {
    copy(dy, dx, n);
    return;
  }
  const DropoutMask mask(args.node, args.ctx);
  const float scale = mask.scale();
  parallel_for_elements(args.ctx.pool, n, [&](int64_t begin, int64_t end) {
    mask.for_each(begin, end, [&](int64_t j, bool keep) { dx[j] = keep ? dy[j] * scale : 0.0f; });
  });
}

}  // namespace devmap::cpu
