// mse_loss: the mean squared error between a prediction and a target of
// the same shape, averaged over every element of the step's batch
// (PyTorch's F.mse_loss with reduction='mean'). The target is any op's
// output (a labels op gives each sample's class index as a float, [1]); it
// gets no gradient, as a detached target in PyTorch.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema mse_loss_schema() {
  OpSchema s;
  s.name = "mse_loss";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "mean over the batch's elements of (prediction - target)^2";
  s.num_inputs = 2;
  s.role = OpRole::kLoss;
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    if (in[0] != in[1])
      throw_invalid("prediction " + in[0].to_string() + " and target " + in[1].to_string() +
                    " must have the same shape per sample");
    return Shape{1};
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return 3.0 * static_cast<double>(in[0].numel());
  };
  s.grad_inputs = {true, false};
  s.backward_flops_factor = 1.0;
  // The GPU kernel's per-sample sums (one double each); the CPU kernel uses
  // none.
  s.workspace_bytes = [](const Attrs&, const std::vector<Shape>&, const Shape&, int64_t batch) {
    return static_cast<uint64_t>(batch) * sizeof(double);
  };
  return s;
}

}  // namespace devmap::ops
