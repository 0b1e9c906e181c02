// batch_norm on the CPU: PyTorch's parameter and state names, shapes and
// init; training and evaluation values and the running statistics against
// PyTorch 1.13's nn.BatchNorm2d; gradients of the input, weight and bias
// against finite differences (a flipped sign must fail), for feature maps
// and dense features; no gradient for the state; parameter gradients
// accumulate; the same bits on one and two threads. On every CPU path.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

// Every test runs on every CPU path (cpu_paths.h).
class BatchNorm : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(BatchNorm);

TEST_P(BatchNorm, ParamsAndStateArePyTorchs) {
  const Node n = make_node("batch_norm", "bn", {{3, 4, 4}});
  ASSERT_EQ(n.params.size(), 5u);
  const char* names[] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  const ParamInit inits[] = {ParamInit::kOnes, ParamInit::kZeros, ParamInit::kZeros, ParamInit::kOnes,
                             ParamInit::kZeros};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(n.params[i].name, names[i]);
    EXPECT_EQ(n.params[i].init, inits[i]) << names[i];
    EXPECT_EQ(n.params[i].trained, i < 2) << names[i];
    EXPECT_EQ(n.params[i].shape, i < 4 ? Shape{3} : Shape{}) << names[i];
  }
  EXPECT_TRUE(n.schema->couples_samples);
  EXPECT_TRUE(n.schema->has_state);
  EXPECT_EQ(make_node("batch_norm", "bn", {{7}}).params[0].shape, Shape{7});
  EXPECT_THROW(make_node("batch_norm", "bn", {{4, 4}}), Error);
  EXPECT_THROW(make_node("batch_norm", "bn", {{4}}, {{"eps", 0.0}}), Error);
  EXPECT_THROW(make_node("batch_norm", "bn", {{4}}, {{"momentum", 1.5}}), Error);
}

// x [2, 2, 2, 2]: nn.BatchNorm2d(2) in train mode, then eval mode.
const std::vector<float> kX{1, 2, 4, 7, 0, -1, 3, 0.5f, 2, -3, 1, 5, 1, 1, 2, -2};

void init_default(OpHarness& h) {
  std::copy(kX.begin(), kX.end(), h.inputs[0].data());
  for (int c = 0; c < 2; ++c) {
    h.params[0].data()[c] = 1.0f;
    h.params[1].data()[c] = 0.0f;
    h.params[2].data()[c] = 0.0f;
    h.params[3].data()[c] = 1.0f;
  }
  h.params[4].data()[0] = 0.0f;
}

TEST_P(BatchNorm, TrainingMatchesPyTorchAndUpdatesTheState) {
  OpHarness h(make_node("batch_norm", "bn", {{2, 2, 2}}), 2);
  init_default(h);
  h.forward();
  const std::vector<double> torch{-0.4866110682487488,  -0.13271212577819824, 0.5750857591629028,  1.6367826461791992,
                                  -0.3779636025428772,  -1.0498988628387451,  1.6378424167633057,  -0.04199594259262085,
                                  -0.13271212577819824, -1.9022068977355957,  -0.4866110682487488, 0.9289847016334534,
                                  0.2939717173576355,   0.2939717173576355,   0.9659070372581482,  -1.7218341827392578};
  for (size_t i = 0; i < torch.size(); ++i) EXPECT_NEAR(h.output.data()[i], torch[i], 1e-6) << i;
  EXPECT_NEAR(h.params[2].data()[0], 0.23749999701976776, 1e-7);
  EXPECT_NEAR(h.params[2].data()[1], 0.05625000223517418, 1e-7);
  EXPECT_NEAR(h.params[3].data()[0], 1.8125, 1e-6);  // from the unbiased variance
  EXPECT_NEAR(h.params[3].data()[1], 1.1531249284744263, 1e-6);
  EXPECT_EQ(h.params[4].data()[0], 1.0f);
  h.forward();  // once per call (micro-batch)
  EXPECT_EQ(h.params[4].data()[0], 2.0f);
  EXPECT_NEAR(h.params[2].data()[0], 0.9 * 0.2375 + 0.1 * 2.375, 1e-6);
}

TEST_P(BatchNorm, EvaluationUsesTheRunningStatisticsAndLeavesThemAlone) {
  OpHarness h(make_node("batch_norm", "bn", {{2, 2, 2}}), 2);
  init_default(h);
  h.forward();  // one training step, as PyTorch's before eval()
  h.ctx.training = false;
  const std::vector<float> mean = to_vector(h.params[2]), var = to_vector(h.params[3]);
  h.forward();
  const std::vector<double> torch{0.5663692355155945,   1.3091485500335693, 2.7947072982788086, 5.023045063018799,
                                  -0.05238204821944237, -0.983618438243866, 2.7413270473480225, 0.413236141204834,
                                  1.3091485500335693,   -2.40474796295166,  0.5663692355155945, 3.5374865531921387,
                                  0.8788543343544006,   0.8788543343544006, 1.8100907802581787, -1.9148547649383545};
  for (size_t i = 0; i < torch.size(); ++i) EXPECT_NEAR(h.output.data()[i], torch[i], 2e-6) << i;
  EXPECT_EQ(to_vector(h.params[2]), mean);
  EXPECT_EQ(to_vector(h.params[3]), var);
  EXPECT_EQ(h.params[4].data()[0], 1.0f);
}

TEST_P(BatchNorm, TrainingOnOneValuePerChannelIsAnError) {
  OpHarness h(make_node("batch_norm", "bn", {{4}}), 1);
  EXPECT_THROW(h.forward(), Error);
  h.ctx.training = false;
  EXPECT_NO_THROW(h.forward());
}

OpHarness& randomized(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -2, 2);
  fill_uniform(span_of(h.params[0]), seed + 1, 0.5f, 1.5f);
  fill_uniform(span_of(h.params[1]), seed + 2, -0.5f, 0.5f);
  return h;
}

TEST_P(BatchNorm, GradientsOfFeatureMaps) {
  OpHarness h(make_node("batch_norm", "bn", {{3, 2, 3}}), 3);
  expect_gradients(randomized(h, 41), 42);
}

// Planes of 20 positions: one full chunk of 16 lanes, then a tail of 4.
TEST_P(BatchNorm, GradientsOfPlanesWiderThanTheLanes) {
  OpHarness h(make_node("batch_norm", "bn", {{2, 4, 5}}), 3);
  expect_gradients(randomized(h, 51), 52);
}

// A channel whose mean is far larger than its spread (2^20 against 1)
// normalises as a two-pass reference in double does: the sums are shifted
// by the channel's first value, so E[x^2] - E[x]^2 cancels nothing (it
// would lose about 1e-3 of the variance here).
TEST_P(BatchNorm, ALargeMeanCancelsNothing) {
  OpHarness h(make_node("batch_norm", "bn", {{2, 6, 7}}), 3);
  randomized(h, 53);
  for (float& v : span_of(h.inputs[0])) v += 1048576.0f;
  h.forward();
  const int64_t n = 3, c = 2, hw = 42;
  for (int64_t ch = 0; ch < c; ++ch) {
    auto x = [&](int64_t s, int64_t j) { return static_cast<double>(h.inputs[0].data()[(s * c + ch) * hw + j]); };
    double mean = 0, var = 0;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < hw; ++j) mean += x(s, j) / (n * hw);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < hw; ++j) var += (x(s, j) - mean) * (x(s, j) - mean) / (n * hw);
    ASSERT_GT(var, 0.1);
    const double w = h.params[0].data()[ch], b = h.params[1].data()[ch];
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < hw; ++j)
        EXPECT_NEAR(h.output.data()[(s * c + ch) * hw + j], (x(s, j) - mean) / std::sqrt(var + 1e-5) * w + b, 1e-5);
  }
}

TEST_P(BatchNorm, GradientsOfDenseFeatures) {
  OpHarness h(make_node("batch_norm", "bn", {{5}}), 4);
  expect_gradients(randomized(h, 43), 44);
}

TEST_P(BatchNorm, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("batch_norm", "bn", {{3, 2, 3}}), 3);
  expect_gradients(randomized(h, 45), 46, /*flip_sign=*/true);
}

TEST_P(BatchNorm, StateGetsNoGradientAndParameterGradientsAccumulate) {
  OpHarness h(make_node("batch_norm", "bn", {{4, 2, 2}}), 3);
  randomized(h, 47);
  fill_uniform(span_of(h.d_output), 48, -1, 1);
  for (int i = 2; i < 5; ++i) fill_uniform(span_of(h.d_params[static_cast<size_t>(i)]), 49, -1, 1);
  const std::vector<float> untouched = to_vector(h.d_params[2]);
  h.forward();
  h.backward();  // the harness passes null gradient views for the state
  const std::vector<float> once = to_vector(h.d_params[0]), bias_once = to_vector(h.d_params[1]);
  h.backward(/*accumulate=*/true);
  for (size_t j = 0; j < once.size(); ++j) {
    EXPECT_FLOAT_EQ(h.d_params[0].data()[j], 2 * once[j]) << j;
    EXPECT_FLOAT_EQ(h.d_params[1].data()[j], 2 * bias_once[j]) << j;
  }
  EXPECT_EQ(to_vector(h.d_params[2]), untouched);
}

TEST_P(BatchNorm, WithoutAnInputGradientStillGivesTheParameters) {
  const Node node = make_node("batch_norm", "bn", {{3, 2, 2}});
  OpHarness full(node, 4), part(node, 4);
  for (OpHarness* h : {&full, &part}) {
    randomized(*h, 50);
    fill_uniform(span_of(h->d_output), 51, -1, 1);
  }
  part.want_input_grad[0] = false;
  for (OpHarness* h : {&full, &part}) {
    h->forward();
    h->backward();
  }
  EXPECT_TRUE(same_bits(full.d_params[0], part.d_params[0]));
  EXPECT_TRUE(same_bits(full.d_params[1], part.d_params[1]));
}

TEST_P(BatchNorm, TwoThreadsMatchOneThread) {
  const Node node = make_node("batch_norm", "bn", {{8, 6, 6}});
  OpHarness one(node, 16, 1), two(node, 16, 2);
  for (OpHarness* h : {&one, &two}) {
    randomized(*h, 52);
    fill_uniform(span_of(h->d_output), 53, -1, 1);
    h->forward();
    h->backward();
  }
  EXPECT_TRUE(same_bits(one.output, two.output));
  EXPECT_TRUE(same_bits(one.d_inputs[0], two.d_inputs[0]));
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(same_bits(one.d_params[i], two.d_params[i]));
  for (size_t i = 2; i < 5; ++i) EXPECT_TRUE(same_bits(one.params[i], two.params[i]));
}

}  // namespace
}  // namespace devmap::test
