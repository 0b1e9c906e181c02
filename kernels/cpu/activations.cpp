#include "kernels/cpu/activations.h"

#include <cassert>
#include <cmath>

#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

// y = f(x) over the output's elements.
template <class F>
void map_forward(const ForwardArgs& args, const F& f) {
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  parallel_for_elements(args.ctx.pool, args.output.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
  });
}

// dx = g(v, dy) where v is the forward input (from_input) or output.
template <class G>
void map_backward(const BackwardArgs& args, bool from_input, const G& g) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const float* v = from_input ? args.inputs[0].data : args.output.data;
  assert(v != nullptr && "the schema keeps what the gradient rule reads");
  const float* dy = args.d_output.data;
  parallel_for_elements(args.ctx.pool, args.d_output.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dx[i] = g(v[i], dy[i]);
  });
}

bool tanh_form(const Node& node) {
  return node.attrs.get_string("approximate") == "tanh";
}

}  // namespace

void GeluKernel::forward(const ForwardArgs& args) {
  if (tanh_form(args.node)) {
    map_forward(args, [](float x) {
      const double d = x;
      return static_cast<float>(0.5 * d * (1.0 + std::tanh(kSqrt2OverPi * (d + kGeluCubic * d * d * d))));
    });
  } else {
    map_forward(args, [](float x) {
      const double d = x;
      return static_cast<float>(0.5 * d * (1.0 + std::erf(d * kSqrtHalf)));
    });
  }
}

void GeluKernel::backward(const BackwardArgs& args) {
  if (tanh_form(args.node)) {
    map_backward(args, true, [](float x, float dy) {
      const double d = x;
      const double t = std::tanh(kSqrt2OverPi * (d + kGeluCubic * d * d * d));
      const double dt = (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * d * d);
      return static_cast<float>(dy * (0.5 * (1.0 + t) + 0.5 * d * dt));
    });
  } else {
    map_backward(args, true, [](float x, float dy) {
      const double d = x;
      const double cdf = 0.5 * (1.0 + std::erf(d * kSqrtHalf));
      const double pdf = kInvSqrt2Pi * std::exp(-0.5 * d * d);
      return static_cast<float>(dy * (cdf + d * pdf));
    });
  }
}

void LeakyReluKernel::forward(const ForwardArgs& args) {
  const auto slope = static_cast<float>(args.node.attrs.get_float("negative_slope"));
  map_forward(args, [slope](float x) { return x > 0.0f ? x : slope * x; });
}

void LeakyReluKernel::backward(const BackwardArgs& args) {
  const auto slope = static_cast<float>(args.node.attrs.get_float("negative_slope"));
  map_backward(args, true, [slope](float x, float dy) { return x > 0.0f ? dy : slope * dy; });
}

void SigmoidKernel::forward(const ForwardArgs& args) {
  map_forward(args, [](float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); });
}

void SigmoidKernel::backward(const BackwardArgs& args) {
  map_backward(args, false, [](float y, float dy) { return dy * (y * (1.0f - y)); });
}

void TanhKernel::forward(const ForwardArgs& args) {
  map_forward(args, [](float x) { return static_cast<float>(std::tanh(static_cast<double>(x))); });
}

void TanhKernel::backward(const BackwardArgs& args) {
  map_backward(args, false, [](float y, float dy) { return dy * (1.0f - y * y); });
}

}  // namespace devmap::cpu
