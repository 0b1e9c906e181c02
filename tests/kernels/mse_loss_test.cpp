// mse_loss on the CPU: PyTorch's reduction='mean' value, the mean over the
// step's batch when the step is split into micro-batches, the gradient of
// the prediction against finite differences (a flipped sign must fail),
// none for the target, and shapes that must agree.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

TEST(MseLoss, MatchesPyTorchsMean) {
  OpHarness h(make_node("mse_loss", "loss", {{2}, {2}}), 2);
  const std::vector<float> p{1, 2, 3, 5}, t{0, 2, 1, 1};
  std::copy(p.begin(), p.end(), h.inputs[0].data());
  std::copy(t.begin(), t.end(), h.inputs[1].data());
  h.forward();
  EXPECT_FLOAT_EQ(h.output.data()[0], 5.25f);  // F.mse_loss(p, t) in PyTorch 1.13
}

TEST(MseLoss, MicroBatchesAddUpToTheStepsMean) {
  OpHarness h(make_node("mse_loss", "loss", {{2}, {2}}), 1);
  h.ctx.batch_total = 2;
  h.inputs[0].data()[0] = 1;
  h.inputs[0].data()[1] = 2;
  h.inputs[1].data()[0] = 0;
  h.inputs[1].data()[1] = 2;
  h.forward();
  const float first = h.output.data()[0];
  h.inputs[0].data()[0] = 3;
  h.inputs[0].data()[1] = 5;
  h.inputs[1].data()[0] = 1;
  h.inputs[1].data()[1] = 1;
  h.forward();
  EXPECT_FLOAT_EQ(first + h.output.data()[0], 5.25f);
}

TEST(MseLoss, ShapesMustAgreeAndTheTargetGetsNoGradient) {
  EXPECT_THROW(make_node("mse_loss", "loss", {{3}, {1}}), Error);
  const Node n = make_node("mse_loss", "loss", {{1}, {1}});
  EXPECT_TRUE(n.schema->input_gets_grad(0));
  EXPECT_FALSE(n.schema->input_gets_grad(1));
}

TEST(MseLoss, Gradients) {
  OpHarness h(make_node("mse_loss", "loss", {{3, 2}, {3, 2}}), 4);
  fill_uniform(span_of(h.inputs[0]), 41, -1, 1);
  fill_uniform(span_of(h.inputs[1]), 42, -1, 1);
  expect_gradients(h, 43);
}

TEST(MseLoss, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("mse_loss", "loss", {{3, 2}, {3, 2}}), 4);
  fill_uniform(span_of(h.inputs[0]), 44, -1, 1);
  fill_uniform(span_of(h.inputs[1]), 45, -1, 1);
  expect_gradients(h, 46, /*flip_sign=*/true);
}

}  // namespace
}  // namespace devmap::test
