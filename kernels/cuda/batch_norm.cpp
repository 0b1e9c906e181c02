#include "kernels/cuda/batch_norm.h"

#include <string>

#include "core/base/error.h"
#include "kernels/cuda/batch_norm_kernels.h"

namespace devmap::cuda {
namespace {

BatchNormArgs batch_norm_args(const Node& node, const TensorView& x, std::span<const TensorView> params,
                              const KernelContext& ctx) {
  BatchNormArgs a;
  a.x = x.data;
  a.weight = params[0].data;
  a.bias = params[1].data;
  a.running_mean = params[2].data;
  a.running_var = params[3].data;
  a.num_batches_tracked = params[4].data;
  a.n = x.shape[0];
  a.c = x.shape[1];
  a.hw = x.shape.rank() == 4 ? x.shape[2] * x.shape[3] : 1;
  a.eps = node.attrs.get_float("eps");
  a.momentum = node.attrs.get_float("momentum");
  a.training = ctx.training;
  const uint64_t want = node.workspace_bytes(a.n);
  if (ctx.workspace == nullptr || ctx.workspace_bytes < want)
    throw_runtime(node.op() + " '" + node.name + "': workspace of " + std::to_string(ctx.workspace_bytes) +
                  " bytes is smaller than the " + std::to_string(want) +
                  " bytes workspace_bytes() asked for (executor bug)");
  a.scratch = reinterpret_cast<double*>(ctx.workspace);
  return a;
}

}  // namespace

void BatchNormKernel::forward(const ForwardArgs& args) {
  const BatchNormArgs a = batch_norm_args(args.node, args.inputs[0], args.params, args.ctx);
  if (a.training && a.n * a.hw < 2)
    throw_invalid("batch_norm '" + args.node.name + "': expected more than 1 value per channel when training, got " +
                  std::to_string(a.n * a.hw) + " (a batch or micro-batch of " + std::to_string(a.n) + ")");
  launch_batch_norm_forward(a, args.output.data, device_.stream());
}

void BatchNormKernel::backward(const BackwardArgs& args) {
  const BatchNormArgs a = batch_norm_args(args.node, args.inputs[0], args.params, args.ctx);
  BatchNormGrads g;
  g.dy = args.d_output.data;
  g.dx = args.d_inputs[0].data;
  g.d_weight = args.d_params[0].data;
  g.d_bias = args.d_params[1].data;
  g.accumulate = args.accumulate;
  launch_batch_norm_backward(a, g, device_.stream());
}

}  // namespace devmap::cuda
