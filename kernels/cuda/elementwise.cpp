#include "kernels/cuda/elementwise.h"

#include <cassert>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise_kernels.h"

namespace devmap::cuda {
namespace {

void copy(const float* src, float* dst, size_t bytes, cudaStream_t stream) {
  if (src == dst || bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (device to device)");
}

}  // namespace

void AddKernel::forward(const ForwardArgs& args) {
  launch_add(args.inputs[0].data, args.inputs[1].data, args.output.data, args.output.numel(), device_.stream());
}

void AddKernel::backward(const BackwardArgs& args) {
  for (const TensorView& d : args.d_inputs)
    if (d.data != nullptr) copy(args.d_output.data, d.data, args.d_output.nbytes(), device_.stream());
}

void CopyKernel::forward(const ForwardArgs& args) {
  assert(args.inputs[0].numel() == args.output.numel());
  copy(args.inputs[0].data, args.output.data, args.output.nbytes(), device_.stream());
}

void CopyKernel::backward(const BackwardArgs& args) {
  if (args.d_inputs[0].data != nullptr)
    copy(args.d_output.data, args.d_inputs[0].data, args.d_inputs[0].nbytes(), device_.stream());
}

void DropoutKernel::apply(const Node& node, const KernelContext& ctx, const float* src, float* dst, int64_t n) {
  if (!ctx.training) {
    copy(src, dst, static_cast<size_t>(n) * sizeof(float), device_.stream());
    return;
  }
  assert(ctx.sample_offset >= 0 && ctx.step >= 0);
  const double rate = node.attrs.get_float("rate");
  DropoutParams p{};
  p.key = philox_key(ctx.seed, node.name);
  p.c2 = static_cast<uint32_t>(static_cast<uint64_t>(ctx.step));
  p.c3 = static_cast<uint32_t>(static_cast<uint64_t>(ctx.step) >> 32);
  p.first = static_cast<uint64_t>(ctx.sample_offset) * static_cast<uint64_t>(node.out_shape.numel());
  p.rate = static_cast<float>(rate);
  p.scale = static_cast<float>(1.0 / (1.0 - rate));
  launch_dropout(p, src, dst, n, device_.stream());
}

void DropoutKernel::forward(const ForwardArgs& args) {
  apply(args.node, args.ctx, args.inputs[0].data, args.output.data, args.output.numel());
}

void DropoutKernel::backward(const BackwardArgs& args) {
  if (args.d_inputs[0].data == nullptr) return;
  apply(args.node, args.ctx, args.d_output.data, args.d_inputs[0].data, args.d_output.numel());
}

}  // namespace devmap::cuda
