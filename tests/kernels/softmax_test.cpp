// softmax over the features of each sample on the CPU: values against
// PyTorch 1.13's F.softmax(dim=1), a row that would overflow a naive exp,
// gradients against finite differences (a flipped sign must fail), and the
// same bits on one and two threads.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

TEST(Softmax, MatchesPyTorchIncludingALargeLogit) {
  OpHarness h(make_node("softmax", "p", {{3}}), 2);
  const std::vector<float> x{1, 2, 3, -1, 0, 1000};
  std::copy(x.begin(), x.end(), h.inputs[0].data());
  h.forward();
  const std::vector<double> torch{0.09003057317038045, 0.2447284710547976, 0.6652409557748218, 0.0, 0.0, 1.0};
  for (size_t i = 0; i < torch.size(); ++i) EXPECT_NEAR(h.output.data()[i], torch[i], 1e-7) << i;
}

TEST(Softmax, NeedsAVectorPerSample) {
  EXPECT_THROW(make_node("softmax", "p", {{2, 3}}), Error);
}

TEST(Softmax, Gradients) {
  OpHarness h(make_node("softmax", "p", {{7}}), 3);
  fill_uniform(span_of(h.inputs[0]), 21, -2, 2);
  expect_gradients(h, 22);
}

TEST(Softmax, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("softmax", "p", {{7}}), 3);
  fill_uniform(span_of(h.inputs[0]), 23, -2, 2);
  expect_gradients(h, 24, /*flip_sign=*/true);
}

TEST(Softmax, TwoThreadsMatchOneThread) {
  const Node node = make_node("softmax", "p", {{100}});
  OpHarness one(node, 64, 1), two(node, 64, 2);
  for (OpHarness* h : {&one, &two}) {
    fill_uniform(span_of(h->inputs[0]), 25, -5, 5);
    fill_uniform(span_of(h->d_output), 26, -1, 1);
    h->forward();
    h->backward();
  }
  EXPECT_TRUE(same_bits(one.output, two.output));
  EXPECT_TRUE(same_bits(one.d_inputs[0], two.d_inputs[0]));
}

}  // namespace
}  // namespace devmap::test
