// gelu (both forms), leaky_relu, sigmoid, tanh, softmax, layer_norm and
// mse_loss: the CUDA kernels against the CPU kernels. Tolerance: the two
// evaluate the same formulas in the same order, but CUDA's erf, exp, tanh
// and sqrt may differ from the C library's in the last bits of a double,
// which can move a float result by one unit in the last place: relative
// 1e-6 of the element plus 1e-6 of the tensor's largest magnitude.
// leaky_relu (one compare and one multiply) must be equal.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

constexpr double kRtol = 1e-6, kAtol = 1e-6;

void randomize(OpHarness& h, uint64_t seed) {
  for (size_t i = 0; i < h.inputs.size(); ++i) fill_uniform(span_of(h.inputs[i]), seed + i, -3.0f, 3.0f);
  for (size_t i = 0; i < h.params.size(); ++i) fill_uniform(span_of(h.params[i]), seed + 100 + i, 0.5f, 1.5f);
  fill_uniform(span_of(h.d_output), seed + 200, -1.0f, 1.0f);
}

// Forward, backward, and (for ops with parameters) backward accumulating
// into the first gradients, on both devices.
void compare(OpHarness& h, const std::string& what, double rtol, double atol) {
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_close(g.output(), h.output, rtol, atol, what + " forward");
  for (bool accumulate : {false, true}) {
    h.backward(accumulate);
    g.backward(accumulate);
    const std::string pass = accumulate ? " (accumulating)" : "";
    for (size_t i = 0; i < h.inputs.size(); ++i)
      if (h.want_input_grad[i])
        expect_close(g.d_input(i), h.d_inputs[i], rtol, atol, what + " d_input " + std::to_string(i) + pass);
    for (size_t i = 0; i < h.params.size(); ++i)
      expect_close(g.d_param(i), h.d_params[i], rtol, atol, what + " d_" + h.node.params[i].name + pass);
  }
}

TEST(CudaActivations, MatchCpu) {
  DEVMAP_REQUIRE_GPU();
  const std::vector<std::pair<std::string, std::map<std::string, AttrValue>>> ops = {
      {"gelu", {}}, {"gelu", {{"approximate", std::string("tanh")}}}, {"sigmoid", {}}, {"tanh", {}}};
  uint64_t seed = 1;
  for (const auto& [op, attrs] : ops) {
    OpHarness h(make_node(op, "act", {{4, 33}}, attrs), 37);
    randomize(h, seed++);
    compare(h, op, kRtol, kAtol);
  }
}

TEST(CudaLeakyRelu, EqualsCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("leaky_relu", "act", {{4, 33}}, {{"negative_slope", 0.2}}), 37);
  randomize(h, 10);
  compare(h, "leaky_relu", 0.0, 0.0);
}

TEST(CudaSoftmax, MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("softmax", "p", {{100}}), 300);
  randomize(h, 20);
  h.inputs[0].data()[7] = 80.0f;  // one large logit: the max subtraction must happen on both
  compare(h, "softmax", kRtol, kAtol);
}

TEST(CudaLayerNorm, MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("layer_norm", "ln", {{8, 5, 5}}), 19);
  randomize(h, 30);
  compare(h, "layer_norm", kRtol, kAtol);
}

TEST(CudaLayerNorm, WithoutAnInputGradientStillGivesTheParameters) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("layer_norm", "ln", {{64}}), 9);
  randomize(h, 31);
  h.want_input_grad[0] = false;
  compare(h, "layer_norm without dx", kRtol, kAtol);
}

TEST(CudaMseLoss, EqualsCpuOverAMicroBatch) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("mse_loss", "loss", {{3, 7}, {3, 7}}), 50);
  randomize(h, 40);
  h.ctx.batch_total = 200;  // a micro-batch of a larger step
  compare(h, "mse_loss", kRtol, kAtol);
}

}  // namespace
}  // namespace devmap::test
