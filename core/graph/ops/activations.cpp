// Shape-preserving activations with a closed-form gradient (gelu,
// leaky_relu, sigmoid, tanh) and softmax over the features of each sample.
// PyTorch's definitions; the kernels' doc comments give the formulas.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {
namespace {

// An elementwise op costing `flops_per_element` forward; its backward reads
// the input (needs_input) or the output.
OpSchema elementwise(const char* name, const char* summary, double flops_per_element, bool needs_input) {
  OpSchema s;
  s.name = name;
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = summary;
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) { return in[0]; };
  s.forward_flops = [flops_per_element](const Attrs&, const std::vector<Shape>&, const Shape& out) {
    return flops_per_element * static_cast<double>(out.numel());
  };
  s.backward_needs_inputs = needs_input;
  s.backward_needs_output = !needs_input;
  s.backward_flops_factor = 1.0;
  return s;
}

}  // namespace

OpSchema gelu_schema() {
  OpSchema s = elementwise("gelu", "x * Phi(x) (PyTorch's GELU)", 8.0, true);
  s.attrs = {{"approximate", AttrType::kString, false, std::string("none"), 0,
              "none (the exact erf form) or tanh (PyTorch's tanh approximation)"}};
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    const std::string& approximate = a.get_string("approximate");
    if (approximate != "none" && approximate != "tanh")
      throw_invalid("approximate must be none or tanh, got '" + approximate + "'");
    return in[0];
  };
  return s;
}

OpSchema leaky_relu_schema() {
  OpSchema s = elementwise("leaky_relu", "x if x > 0 else negative_slope * x", 1.0, true);
  s.attrs = {{"negative_slope", AttrType::kFloat, false, 0.01, 0, "the slope for x <= 0 (PyTorch's default 0.01)"}};
  return s;
}

OpSchema sigmoid_schema() {
  return elementwise("sigmoid", "1 / (1 + exp(-x))", 4.0, false);
}

OpSchema softmax_schema() {
  OpSchema s = elementwise("softmax", "exp(x) / sum(exp(x)) over the features of each sample", 4.0, false);
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    if (in[0].rank() != 1) throw_invalid("input must be a vector per sample, got " + in[0].to_string());
    return in[0];
  };
  return s;
}

OpSchema tanh_schema() {
  return elementwise("tanh", "tanh(x)", 4.0, false);
}

}  // namespace devmap::ops
