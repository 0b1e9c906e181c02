#include "kernels/cuda/avg_pool2d.h"

#include "kernels/cuda/avg_pool_kernels.h"
#include "kernels/cuda/max_pool2d.h"

namespace devmap::cuda {

// avg_pool2d has max_pool2d's attributes and geometry (core/graph/ops/pool_geometry.h).
void AvgPool2dKernel::forward(const ForwardArgs& args) {
  const PoolGeometry g = MaxPool2dKernel::geometry(args.node, args.inputs[0].shape[0]);
  launch_avg_pool_forward(g, args.inputs[0].data, args.output.data, device_.stream());
}

void AvgPool2dKernel::backward(const BackwardArgs& args) {
  if (args.d_inputs[0].data == nullptr) return;
  const PoolGeometry g = MaxPool2dKernel::geometry(args.node, args.d_output.shape[0]);
  launch_avg_pool_backward(g, args.d_output.data, args.d_inputs[0].data, device_.stream());
}

void GlobalAvgPoolKernel::forward(const ForwardArgs& args) {
  const Shape& in = args.node.input_shapes[0];
  launch_global_avg_pool_forward(args.inputs[0].data, args.inputs[0].shape[0] * in[0], in[1] * in[2], args.output.data,
                                 device_.stream());
}

void GlobalAvgPoolKernel::backward(const BackwardArgs& args) {
  if (args.d_inputs[0].data == nullptr) return;
  const Shape& in = args.node.input_shapes[0];
  launch_global_avg_pool_backward(args.d_output.data, args.d_output.shape[0] * in[0], in[1] * in[2],
                                  args.d_inputs[0].data, device_.stream());
}

}  // namespace devmap::cuda
