// gelu (both forms), leaky_relu, sigmoid and tanh on the CPU: values
// against PyTorch 1.13's (F.gelu, F.leaky_relu, torch.sigmoid, torch.tanh
// in float64 at the same points), gradients against finite differences
// (and a flipped sign must fail that check), and the same bits on one and
// two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

const std::vector<float> kPoints{-3.0f, -1.0f, -0.25f, 0.0f, 0.5f, 2.0f};

struct Case {
  std::string op;
  std::map<std::string, AttrValue> attrs;
  std::vector<double> torch;  // PyTorch's values at kPoints
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"gelu",
       {},
       {-0.00404969409489031, -0.15865525393145702, -0.10032341857926907, 0.0, 0.34573123063700656,
        1.9544997361036416}},
      {"gelu",
       {{"approximate", std::string("tanh")}},
       {-0.0036373920817729943, -0.15880800939172324, -0.100324649298315, 0.0, 0.34571400982514394, 1.954597694087775}},
      {"leaky_relu", {}, {-0.03, -0.01, -0.0025, 0.0, 0.5, 2.0}},
      {"sigmoid",
       {},
       {0.04742587317756678, 0.2689414213699951, 0.43782349911420193, 0.5, 0.6224593312018546, 0.8807970779778823}},
      {"tanh",
       {},
       {-0.9950547536867305, -0.7615941559557649, -0.24491866240370913, 0.0, 0.46211715726000974, 0.9640275800758169}},
  };
  return c;
}

std::string name_of(const Case& c) {
  return c.attrs.empty() ? c.op : c.op + " (approximate: tanh)";
}

TEST(Activations, MatchPyTorchValues) {
  for (const Case& c : cases()) {
    OpHarness h(make_node(c.op, "act", {{6}}, c.attrs), 1);
    std::copy(kPoints.begin(), kPoints.end(), h.inputs[0].data());
    h.forward();
    for (size_t i = 0; i < kPoints.size(); ++i)
      EXPECT_NEAR(h.output.data()[i], c.torch[i], 1e-6 * std::max(1.0, std::abs(c.torch[i])))
          << name_of(c) << " at " << kPoints[i];
  }
}

TEST(Activations, LeakyReluTakesItsSlope) {
  OpHarness h(make_node("leaky_relu", "act", {{2}}, {{"negative_slope", 0.2}}), 1);
  h.inputs[0].data()[0] = -2.0f;
  h.inputs[0].data()[1] = 3.0f;
  h.forward();
  EXPECT_FLOAT_EQ(h.output.data()[0], -0.4f);
  EXPECT_FLOAT_EQ(h.output.data()[1], 3.0f);
  h.d_output.data()[0] = 1.0f;
  h.d_output.data()[1] = 1.0f;
  h.backward();
  EXPECT_FLOAT_EQ(h.d_inputs[0].data()[0], 0.2f);
  EXPECT_FLOAT_EQ(h.d_inputs[0].data()[1], 1.0f);
}

TEST(Activations, UnknownGeluFormIsAConfigError) {
  EXPECT_THROW(make_node("gelu", "act", {{3}}, {{"approximate", std::string("fast")}}), Error);
}

// Inputs in [-2, 2] with |x| >= 0.1 (leaky_relu's kink at 0 is where the
// finite difference would straddle two slopes).
void fill_inputs(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -2.0f, 2.0f);
  for (int64_t i = 0; i < h.inputs[0].size(); ++i) {
    float& v = h.inputs[0].data()[i];
    v = v < 0 ? std::min(v, -0.1f) : std::max(v, 0.1f);
  }
}

TEST(Activations, Gradients) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(name_of(c));
    OpHarness h(make_node(c.op, "act", {{3, 4, 5}}, c.attrs), 2);
    fill_inputs(h, 11);
    expect_gradients(h, 12);
  }
}

TEST(Activations, FlippedGradientsFailTheCheck) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(name_of(c));
    OpHarness h(make_node(c.op, "act", {{3, 4, 5}}, c.attrs), 2);
    fill_inputs(h, 13);
    expect_gradients(h, 14, /*flip_sign=*/true);
  }
}

TEST(Activations, BackwardReadsOnlyWhatTheSchemaKeeps) {
  // The harness passes null for what the schema does not keep; a kernel
  // reading it would crash here.
  for (const Case& c : cases()) {
    OpHarness h(make_node(c.op, "act", {{7}}, c.attrs), 3);
    fill_inputs(h, 15);
    fill_uniform(span_of(h.d_output), 16, -1, 1);
    h.forward();
    h.backward();
    for (int64_t i = 0; i < h.d_inputs[0].size(); ++i) EXPECT_TRUE(std::isfinite(h.d_inputs[0].data()[i])) << c.op;
  }
}

TEST(Activations, LargeTensorOnTwoThreadsMatchesOneThread) {
  for (const Case& c : cases()) {
    const Node node = make_node(c.op, "act", {{100000}}, c.attrs);
    OpHarness one(node, 2, 1), two(node, 2, 2);
    for (OpHarness* h : {&one, &two}) {
      fill_uniform(span_of(h->inputs[0]), 17, -3, 3);
      fill_uniform(span_of(h->d_output), 18, -1, 1);
      h->forward();
      h->backward();
    }
    EXPECT_TRUE(same_bits(one.output, two.output)) << name_of(c);
    EXPECT_TRUE(same_bits(one.d_inputs[0], two.d_inputs[0])) << name_of(c);
  }
}

}  // namespace
}  // namespace devmap::test
