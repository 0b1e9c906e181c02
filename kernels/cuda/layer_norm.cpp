#include "kernels/cuda/layer_norm.h"

#include <cassert>
#include <string>

#include "core/base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/norm_loss_kernels.h"

namespace devmap::cuda {
namespace {

// The op's workspace as doubles, checked against what its schema plans.
double* scratch_of(const Node& node, const KernelContext& ctx, int64_t batch) {
  const uint64_t want = node.workspace_bytes(batch);
  if (ctx.workspace == nullptr || ctx.workspace_bytes < want)
    throw_runtime(node.op() + " '" + node.name + "': workspace of " + std::to_string(ctx.workspace_bytes) +
                  " bytes is smaller than the " + std::to_string(want) +
                  " bytes workspace_bytes() asked for (executor bug)");
  return reinterpret_cast<double*>(ctx.workspace);
}

LayerNormArgs layer_norm_args(const Node& node, const TensorView& x, std::span<const TensorView> params) {
  LayerNormArgs a;
  a.x = x.data;
  a.weight = params[0].data;
  a.bias = params[1].data;
  a.rows = x.shape[0];
  a.features = params[0].numel();
  a.eps = node.attrs.get_float("eps");
  return a;
}

double mse_denominator(const TensorView& prediction, const KernelContext& ctx) {
  assert(ctx.batch_total > 0 && "the executor sets batch_total for loss ops");
  const int64_t rows = prediction.shape[0];
  return static_cast<double>(ctx.batch_total) * static_cast<double>(rows > 0 ? prediction.numel() / rows : 0);
}

}  // namespace

void LayerNormKernel::forward(const ForwardArgs& args) {
  launch_layer_norm_forward(layer_norm_args(args.node, args.inputs[0], args.params), args.output.data,
                            device_.stream());
}

void LayerNormKernel::backward(const BackwardArgs& args) {
  const LayerNormArgs a = layer_norm_args(args.node, args.inputs[0], args.params);
  LayerNormGrads g;
  g.dy = args.d_output.data;
  g.dx = args.d_inputs[0].data;
  g.d_weight = args.d_params[0].data;
  g.d_bias = args.d_params[1].data;
  g.accumulate = args.accumulate;
  g.moments = scratch_of(args.node, args.ctx, a.rows);
  launch_layer_norm_backward(a, g, device_.stream());
}

void MseLossKernel::forward(const ForwardArgs& args) {
  const TensorView& p = args.inputs[0];
  const int64_t rows = p.shape[0];
  if (p.numel() == 0) {
    check(cudaMemsetAsync(args.output.data, 0, sizeof(float), device_.stream()), "cudaMemsetAsync (mse_loss)");
    return;
  }
  launch_mse_forward(p.data, args.inputs[1].data, scratch_of(args.node, args.ctx, rows), args.output.data, rows,
                     p.numel() / rows, mse_denominator(p, args.ctx), device_.stream());
}

void MseLossKernel::backward(const BackwardArgs& args) {
  if (args.d_inputs[0].data == nullptr || args.inputs[0].numel() == 0) return;
  launch_mse_backward(args.inputs[0].data, args.inputs[1].data, args.d_output.data, args.d_inputs[0].data,
                      args.inputs[0].numel(), mse_denominator(args.inputs[0], args.ctx), device_.stream());
}

}  // namespace devmap::cuda
