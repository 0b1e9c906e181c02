// softmax_cross_entropy (the loss), accuracy (a metric) and argmax (the
// prediction). Labels are class indices stored as floats.
#include "core/graph/ops/label_op_layout.h"
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {
namespace {

void check_logits_labels(const std::vector<Shape>& in) {
  if (in[0].rank() != 1) throw_invalid("logits must be a vector per sample, got " + in[0].to_string());
  if (in[1] != Shape{1})
    throw_invalid("second input must be a labels op (shape [1] per sample), got " + in[1].to_string());
}

}  // namespace

OpSchema softmax_cross_entropy_schema() {
  OpSchema s;
  s.name = "softmax_cross_entropy";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "mean over the batch of -log softmax(logits)[label]";
  s.num_inputs = 2;
  s.role = OpRole::kLoss;
  s.second_input_is_labels = true;
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    check_logits_labels(in);
    return Shape{1};
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return 4.0 * static_cast<double>(in[0].numel());
  };
  s.grad_inputs = {true, false};
  s.backward_flops_factor = 1.0;
  // The GPU kernel's per-sample scratch and label-check word
  // (core/graph/ops/label_op_layout.h); the CPU kernel uses none.
  s.workspace_bytes = [](const Attrs&, const std::vector<Shape>&, const Shape&, int64_t batch) {
    return label_op_workspace_bytes(batch);
  };
  return s;
}

OpSchema accuracy_schema() {
  OpSchema s;
  s.name = "accuracy";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "fraction of samples whose largest logit is the label";
  s.num_inputs = 2;
  s.role = OpRole::kMetric;
  s.second_input_is_labels = true;
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    check_logits_labels(in);
    return Shape{1};
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return static_cast<double>(in[0].numel());
  };
  // The GPU kernel's per-sample scratch and label-check word
  // (core/graph/ops/label_op_layout.h); the CPU kernel uses none.
  s.workspace_bytes = [](const Attrs&, const std::vector<Shape>&, const Shape&, int64_t batch) {
    return label_op_workspace_bytes(batch);
  };
  s.differentiable = false;
  return s;
}

OpSchema argmax_schema() {
  OpSchema s;
  s.name = "argmax";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "index of the largest element of each sample (first on ties)";
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    if (in[0].rank() != 1) throw_invalid("input must be a vector per sample, got " + in[0].to_string());
    return Shape{1};
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return static_cast<double>(in[0].numel());
  };
  s.differentiable = false;
  return s;
}

}  // namespace devmap::ops
