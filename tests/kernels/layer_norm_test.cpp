// layer_norm on the CPU: PyTorch's parameter names, shapes and init; values
// against PyTorch 1.13's F.layer_norm; gradients of the input, weight and
// bias against finite differences (a flipped sign must fail); parameter
// gradients accumulate over micro-batches; the same bits on one and two
// threads.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

TEST(LayerNorm, ParamsArePyTorchs) {
  const Node n = make_node("layer_norm", "ln", {{3, 4}});
  ASSERT_EQ(n.params.size(), 2u);
  EXPECT_EQ(n.params[0].name, "weight");
  EXPECT_EQ(n.params[0].shape, (Shape{3, 4}));
  EXPECT_EQ(n.params[0].init, ParamInit::kOnes);
  EXPECT_EQ(n.params[1].name, "bias");
  EXPECT_EQ(n.params[1].init, ParamInit::kZeros);
  EXPECT_THROW(make_node("layer_norm", "ln", {{4}}, {{"eps", 0.0}}), Error);
}

TEST(LayerNorm, MatchesPyTorch) {
  OpHarness h(make_node("layer_norm", "ln", {{4}}), 1);
  const std::vector<float> x{1, 2, 4, 7};
  std::copy(x.begin(), x.end(), h.inputs[0].data());
  for (int j = 0; j < 4; ++j) {
    h.params[0].data()[j] = 1.0f;
    h.params[1].data()[j] = 0.0f;
  }
  h.forward();
  const std::vector<double> torch{-1.0910884120486357, -0.6546530472291815, 0.21821768240972705, 1.5275237768680898};
  for (size_t i = 0; i < torch.size(); ++i) EXPECT_NEAR(h.output.data()[i], torch[i], 1e-6) << i;
  // Scale and shift apply after normalising.
  h.params[0].data()[2] = 2.0f;
  h.params[1].data()[2] = 0.5f;
  h.forward();
  EXPECT_NEAR(h.output.data()[2], 2.0 * torch[2] + 0.5, 1e-6);
}

OpHarness& randomized(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -2, 2);
  fill_uniform(span_of(h.params[0]), seed + 1, 0.5f, 1.5f);
  fill_uniform(span_of(h.params[1]), seed + 2, -0.5f, 0.5f);
  return h;
}

TEST(LayerNorm, Gradients) {
  OpHarness h(make_node("layer_norm", "ln", {{2, 3, 2}}), 3);
  expect_gradients(randomized(h, 31), 32);
}

TEST(LayerNorm, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("layer_norm", "ln", {{2, 3, 2}}), 3);
  expect_gradients(randomized(h, 33), 34, /*flip_sign=*/true);
}

TEST(LayerNorm, ParameterGradientsAccumulate) {
  OpHarness h(make_node("layer_norm", "ln", {{5}}), 2);
  randomized(h, 35);
  fill_uniform(span_of(h.d_output), 36, -1, 1);
  h.forward();
  h.backward();
  const std::vector<float> once = to_vector(h.d_params[0]), bias_once = to_vector(h.d_params[1]);
  h.backward(/*accumulate=*/true);
  for (size_t j = 0; j < once.size(); ++j) {
    EXPECT_FLOAT_EQ(h.d_params[0].data()[j], 2 * once[j]) << j;
    EXPECT_FLOAT_EQ(h.d_params[1].data()[j], 2 * bias_once[j]) << j;
  }
}

TEST(LayerNorm, TwoThreadsMatchOneThread) {
  const Node node = make_node("layer_norm", "ln", {{8, 8, 8}});
  OpHarness one(node, 16, 1), two(node, 16, 2);
  for (OpHarness* h : {&one, &two}) {
    randomized(*h, 37);
    fill_uniform(span_of(h->d_output), 38, -1, 1);
    h->forward();
    h->backward();
  }
  EXPECT_TRUE(same_bits(one.output, two.output));
  EXPECT_TRUE(same_bits(one.d_inputs[0], two.d_inputs[0]));
  EXPECT_TRUE(same_bits(one.d_params[0], two.d_params[0]));
  EXPECT_TRUE(same_bits(one.d_params[1], two.d_params[1]));
}

}  // namespace
}  // namespace devmap::test
