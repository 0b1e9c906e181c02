#include "kernels/cuda/activations.h"

#include <algorithm>
#include <cassert>

#include "core/base/error.h"

namespace devmap::cuda {
namespace {

Activation activation_of(const Node& node) {
  const std::string& op = node.op();
  if (op == "gelu")
    return node.attrs.get_string("approximate") == "tanh" ? Activation::kGeluTanh : Activation::kGeluErf;
  if (op == "leaky_relu") return Activation::kLeakyRelu;
  if (op == "sigmoid") return Activation::kSigmoid;
  if (op == "tanh") return Activation::kTanh;
  throw_runtime("ActivationKernel made for op '" + op + "', which is not an activation (kernel factory bug)");
}

float slope_of(const Node& node) {
  return node.op() == "leaky_relu" ? static_cast<float>(node.attrs.get_float("negative_slope")) : 0.0f;
}

}  // namespace

void ActivationKernel::forward(const ForwardArgs& args) {
  launch_activation_forward(activation_of(args.node), slope_of(args.node), args.inputs[0].data, args.output.data,
                            args.output.numel(), device_.stream());
}

void ActivationKernel::backward(const BackwardArgs& args) {
  if (args.d_inputs[0].data == nullptr) return;
  const Activation f = activation_of(args.node);
  const bool from_input = f != Activation::kSigmoid && f != Activation::kTanh;
  const float* v = from_input ? args.inputs[0].data : args.output.data;
  assert(v != nullptr && "the schema keeps what the gradient rule reads");
  launch_activation_backward(f, slope_of(args.node), v, args.d_output.data, args.d_inputs[0].data,
                             args.d_output.numel(), device_.stream());
}

void SoftmaxKernel::forward(const ForwardArgs& args) {
  const int64_t rows = args.output.shape[0];
  launch_softmax_forward(args.inputs[0].data, args.output.data, rows, args.output.numel() / std::max<int64_t>(rows, 1),
                         device_.stream());
}

void SoftmaxKernel::backward(const BackwardArgs& args) {
  if (args.d_inputs[0].data == nullptr) return;
  const int64_t rows = args.d_output.shape[0];
  launch_softmax_backward(args.output.data, args.d_output.data, args.d_inputs[0].data, rows,
                          args.d_output.numel() / std::max<int64_t>(rows, 1), device_.stream());
}

}  // namespace devmap::cuda
