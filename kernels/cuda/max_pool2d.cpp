#include "kernels/cuda/max_pool2d.h"

#include "core/graph/ops/pool_geometry.h"
#include "kernels/cuda/cuda_check.h"

namespace devmap::cuda {

PoolGeometry MaxPool2dKernel::geometry(const Node& node, int64_t batch) {
  return ops::pool_geometry(node, batch);
}

void MaxPool2dKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0];
  const PoolGeometry g = geometry(args.node, batch);
  if (g.padding != 0) {
    launch_max_pool_forward(g, args.inputs[0].data, args.output.data, device_.stream());
    return;
  }
  const int64_t channels = args.node.input_shapes[0][0];
  if (!desc_) desc_ = std::make_unique<Descriptors>();
  const PoolGeometry& d = desc_->geometry;
  if (d.planes != g.planes || d.height != g.height || d.width != g.width || d.kernel != g.kernel ||
      d.stride != g.stride || desc_->channels != channels) {
    desc_->pool.set(g.kernel, g.stride, g.padding);
    desc_->x.set(batch, channels, g.height, g.width);
    desc_->y.set(batch, channels, g.out_h, g.out_w);
    desc_->geometry = g;
    desc_->channels = channels;
  }
  const float one = 1.0f, zero = 0.0f;
  check(cudnnPoolingForward(device_.cudnn(), desc_->pool.get(), &one, desc_->x.get(), args.inputs[0].data, &zero,
                            desc_->y.get(), args.output.data),
        "cudnnPoolingForward");
}

void MaxPool2dKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const PoolGeometry g = geometry(args.node, args.d_output.shape[0]);
  launch_max_pool_backward(g, args.inputs[0].data, args.output.data, args.d_output.data, dx, device_.stream());
}

}  // namespace devmap::cuda
