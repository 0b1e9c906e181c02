// batch_norm: the CUDA kernel against the CPU kernel, training (outputs,
// gradients, accumulation, the updated running statistics and batch count)
// and evaluating (the running statistics, left alone), for feature maps and
// dense features. Tolerance: the same sums in the same order in double, so
// only sqrt's last bits could differ: relative 1e-6 of the element plus
// 1e-6 of the tensor's largest magnitude.
#include <gtest/gtest.h>

#include <string>

#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

constexpr double kRtol = 1e-6, kAtol = 1e-6;

void randomize(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -3.0f, 3.0f);
  fill_uniform(span_of(h.params[0]), seed + 1, 0.5f, 1.5f);
  fill_uniform(span_of(h.params[1]), seed + 2, -0.5f, 0.5f);
  fill_uniform(span_of(h.params[2]), seed + 3, -0.5f, 0.5f);
  fill_uniform(span_of(h.params[3]), seed + 4, 0.5f, 1.5f);
  h.params[4].data()[0] = 3.0f;
  fill_uniform(span_of(h.d_output), seed + 5, -1.0f, 1.0f);
}

void compare_training(OpHarness& h, const std::string& what) {
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_close(g.output(), h.output, kRtol, kAtol, what + " forward");
  for (size_t i = 2; i < 5; ++i)
    expect_close(g.param(i), h.params[i], kRtol, kAtol, what + " " + h.node.params[i].name);
  EXPECT_EQ(g.param(4).at(0), 4.0f);
  for (bool accumulate : {false, true}) {
    h.backward(accumulate);
    g.backward(accumulate);
    const std::string pass = accumulate ? " (accumulating)" : "";
    if (h.want_input_grad[0]) expect_close(g.d_input(0), h.d_inputs[0], kRtol, kAtol, what + " d_input" + pass);
    for (size_t i = 0; i < 2; ++i)
      expect_close(g.d_param(i), h.d_params[i], kRtol, kAtol, what + " d_" + h.node.params[i].name + pass);
  }
}

TEST(CudaBatchNorm, TrainingOnFeatureMapsMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("batch_norm", "bn", {{6, 5, 7}}), 9);
  randomize(h, 60);
  compare_training(h, "batch_norm [6,5,7]");
}

TEST(CudaBatchNorm, TrainingOnDenseFeaturesMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("batch_norm", "bn", {{300}}), 17);
  randomize(h, 61);
  compare_training(h, "batch_norm [300]");
}

TEST(CudaBatchNorm, WithoutAnInputGradientStillGivesTheParameters) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("batch_norm", "bn", {{4, 3, 3}}), 5);
  randomize(h, 62);
  h.want_input_grad[0] = false;
  compare_training(h, "batch_norm without dx");
}

TEST(CudaBatchNorm, EvaluatingUsesTheRunningStatisticsLikeCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("batch_norm", "bn", {{6, 5, 7}}), 9);
  randomize(h, 63);
  h.ctx.training = false;
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_close(g.output(), h.output, kRtol, kAtol, "batch_norm eval forward");
  for (size_t i = 2; i < 5; ++i) EXPECT_EQ(g.param(i), to_vector(h.params[i])) << h.node.params[i].name;
}

}  // namespace
}  // namespace devmap::test
