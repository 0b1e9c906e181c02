#include "kernels/cpu/dropout.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

Node dropout_node(Shape per_sample, double rate, const std::string& name = "drop") {
  return make_node("dropout", name, {std::move(per_sample)}, {{"rate", rate}});
}

// x all ones: y is the mask times the scale.
void fill_ones(const Buffer& b) {
  std::fill(b.data(), b.data() + b.size(), 1.0f);
}

TEST(Dropout, EvaluationIsIdentity) {
  OpHarness h(dropout_node({4, 5}, 0.5), 3);
  fill_uniform(span_of(h.inputs[0]), 1, -1, 1);
  h.ctx.training = false;
  h.forward();
  EXPECT_TRUE(same_bits(h.output, h.inputs[0]));
}

TEST(Dropout, KeepsAboutOneMinusRateAndScalesExactly) {
  const double rate = 0.3;
  OpHarness h(dropout_node({1000}, rate), 10);
  fill_ones(h.inputs[0]);
  h.forward();
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  int64_t kept = 0;
  for (float v : to_vector(h.output)) {
    ASSERT_TRUE(v == 0.0f || v == scale) << v;
    kept += v != 0.0f;
  }
  EXPECT_NEAR(static_cast<double>(kept) / 10000.0, 1.0 - rate, 0.02);
}

TEST(Dropout, MaskMatchesTheDocumentedCounter) {
  // Element i of sample s: uniform_at(philox_key(seed, name), s*numel + i, step lo, step hi) >= rate.
  OpHarness h(dropout_node({7}, 0.5, "fc_drop"), 3);
  fill_ones(h.inputs[0]);
  h.ctx.seed = 99;
  h.ctx.step = (int64_t{5} << 32) + 17;
  h.ctx.sample_offset = 6;
  h.forward();
  const PhiloxKey key = philox_key(99, "fc_drop");
  for (int64_t n = 0; n < 3; ++n) {
    for (int64_t i = 0; i < 7; ++i) {
      const bool keep = uniform_at(key, static_cast<uint64_t>((6 + n) * 7 + i), 17, 5) >= 0.5f;
      EXPECT_EQ(h.output.data()[n * 7 + i], keep ? 2.0f : 0.0f) << n << "," << i;
    }
  }
}

TEST(Dropout, MaskDependsOnStepSeedAndName) {
  auto mask = [](const std::string& name, uint64_t seed, int64_t step) {
    OpHarness h(dropout_node({64}, 0.5, name), 2);
    fill_ones(h.inputs[0]);
    h.ctx.seed = seed;
    h.ctx.step = step;
    h.forward();
    return to_vector(h.output);
  };
  const std::vector<float> base = mask("d", 1, 0);
  EXPECT_EQ(mask("d", 1, 0), base);
  EXPECT_NE(mask("d", 1, 1), base);
  EXPECT_NE(mask("d", 2, 0), base);
  EXPECT_NE(mask("e", 1, 0), base);
}

TEST(Dropout, BackwardUsesTheForwardMask) {
  OpHarness h(dropout_node({50}, 0.4), 4);
  fill_uniform(span_of(h.inputs[0]), 1, 0.5f, 1.0f);  // nonzero, so y == 0 only where dropped
  fill_uniform(span_of(h.d_output), 2, 0.5f, 1.0f);
  h.ctx.step = 3;
  h.forward();
  h.backward();  // inputs are not passed to backward: the mask is recomputed
  for (int64_t i = 0; i < h.output.size(); ++i) {
    EXPECT_EQ(h.output.data()[i] == 0.0f, h.d_inputs[0].data()[i] == 0.0f) << i;
    if (h.output.data()[i] != 0.0f) {
      EXPECT_FLOAT_EQ(h.d_inputs[0].data()[i] / h.d_output.data()[i], h.output.data()[i] / h.inputs[0].data()[i]);
    }
  }
}

TEST(Dropout, RateZeroKeepsEverything) {
  OpHarness h(dropout_node({33}, 0.0), 2);
  fill_uniform(span_of(h.inputs[0]), 1, -1, 1);
  h.forward();
  EXPECT_TRUE(same_bits(h.output, h.inputs[0]));
}

TEST(Dropout, Gradients) {
  OpHarness h(dropout_node({3, 5, 5}, 0.5), 2);
  fill_uniform(span_of(h.inputs[0]), 1, -1, 1);
  h.ctx.step = 7;
  h.ctx.sample_offset = 4;
  expect_gradients(h, 41);
}

TEST(Dropout, FlippedGradientsFailTheCheck) {
  OpHarness h(dropout_node({3, 5, 5}, 0.5), 2);
  fill_uniform(span_of(h.inputs[0]), 2, -1, 1);
  h.ctx.step = 7;
  expect_gradients(h, 42, /*flip_sign=*/true);
}

}  // namespace
}  // namespace devmap::test
