// softmax_cross_entropy, accuracy and argmax.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

void set(const Buffer& b, const std::vector<float>& v) {
  ASSERT_EQ(b.size(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), b.data());
}

Node xent_node(int64_t classes) {
  return make_node("softmax_cross_entropy", "loss", {{classes}, {1}});
}

// Random logits in [-2, 2) and labels (class indices as floats).
void randomize(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -2, 2);
  const int64_t classes = h.node.input_shapes[0][0];
  fill_uniform(span_of(h.inputs[1]), seed + 1, 0, static_cast<float>(classes));
  for (int64_t n = 0; n < h.inputs[1].size(); ++n) h.inputs[1].data()[n] = std::floor(h.inputs[1].data()[n]);
}

std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    return e.what();
  }
  ADD_FAILURE() << "no devmap::Error thrown";
  return "";
}

TEST(SoftmaxCrossEntropy, HandComputed) {
  OpHarness h(xent_node(2), 2);
  set(h.inputs[0], {0, 0, /* sample 1 */ 1, 2});
  set(h.inputs[1], {0, 1});
  h.forward();
  // (log 2 + log(e + e^2) - 2) / 2
  EXPECT_NEAR(h.output.data()[0], (0.6931471805599453 + 0.3132616875182226) / 2, 1e-7);

  set(h.d_output, {1});
  h.backward();
  // (softmax - onehot) / 2; softmax([1, 2]) = [1/(1+e), e/(1+e)]
  EXPECT_TRUE(h.d_inputs[1].data()[0] == 0 && h.d_inputs[1].data()[1] == 0);  // labels: untouched
  const std::vector<float> d = to_vector(h.d_inputs[0]);
  EXPECT_FLOAT_EQ(d[0], -0.25f);
  EXPECT_FLOAT_EQ(d[1], 0.25f);
  EXPECT_FLOAT_EQ(d[2], 0.13447071f);
  EXPECT_FLOAT_EQ(d[3], -0.13447071f);

  set(h.d_output, {2});  // the upstream gradient scales everything
  h.backward();
  EXPECT_FLOAT_EQ(h.d_inputs[0].data()[0], -0.5f);
}

TEST(SoftmaxCrossEntropy, MicroBatchesAddUpToTheBatchMean) {
  OpHarness whole(xent_node(5), 4);
  randomize(whole, 1);
  whole.forward();
  set(whole.d_output, {1});
  whole.backward();

  double sum = 0.0;
  for (int64_t half = 0; half < 2; ++half) {
    OpHarness part(xent_node(5), 2);
    std::copy_n(whole.inputs[0].data() + half * 10, 10, part.inputs[0].data());
    std::copy_n(whole.inputs[1].data() + half * 2, 2, part.inputs[1].data());
    part.ctx.batch_total = 4;
    part.ctx.sample_offset = 2 * half;
    part.forward();
    sum += part.output.data()[0];
    set(part.d_output, {1});
    part.backward();
    for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(part.d_inputs[0].data()[i], whole.d_inputs[0].data()[half * 10 + i]);
  }
  EXPECT_NEAR(sum, whole.output.data()[0], 1e-6);
}

TEST(SoftmaxCrossEntropy, StableForLargeLogits) {
  OpHarness h(xent_node(3), 2);
  set(h.inputs[0], {1000, 0, -1000, /* sample 1 */ -1000, 1000, 999});
  set(h.inputs[1], {1, 2});
  h.forward();
  // Sample 0: 1000 + log(1 + e^-1000 + e^-2000) = 1000; sample 1: log(1 + e^-1) + ... = 1.3132617.
  EXPECT_NEAR(h.output.data()[0], (1000.0 + 1.3132616875182228) / 2, 1e-3);
  set(h.d_output, {1});
  h.backward();
  for (float v : to_vector(h.d_inputs[0])) EXPECT_TRUE(std::isfinite(v));
}

TEST(SoftmaxCrossEntropy, BadLabelsThrowNamingTheSample) {
  OpHarness h(xent_node(3), 2);
  h.ctx.sample_offset = 10;
  for (float bad : {3.0f, -1.0f, 0.5f, std::nanf("")}) {
    set(h.inputs[1], {0, bad});
    const std::string msg = error_message([&] { h.forward(); });
    EXPECT_NE(msg.find("softmax_cross_entropy 'loss'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sample 11"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[0, 3)"), std::string::npos) << msg;
    error_message([&] { h.backward(); });
  }
}

TEST(SoftmaxCrossEntropy, Gradients) {
  OpHarness h(xent_node(5), 3);
  randomize(h, 2);
  EXPECT_FALSE(h.want_input_grad[1]);  // labels get no gradient
  expect_gradients(h, 71);
}

TEST(SoftmaxCrossEntropy, FlippedGradientsFailTheCheck) {
  OpHarness h(xent_node(5), 3);
  randomize(h, 3);
  expect_gradients(h, 72, /*flip_sign=*/true);
}

TEST(Accuracy, HandComputed) {
  OpHarness h(make_node("accuracy", "acc", {{3}, {1}}), 3);
  set(h.inputs[0], {1, 3, 2, /**/ 5, 5, 1, /**/ 0, 0, 1});
  set(h.inputs[1], {1, 1, 2});  // right; tie -> class 0, wrong; right
  h.forward();
  EXPECT_FLOAT_EQ(h.output.data()[0], 2.0f / 3.0f);
  h.ctx.batch_total = 6;  // a micro-batch of a batch of 6
  h.forward();
  EXPECT_FLOAT_EQ(h.output.data()[0], 2.0f / 6.0f);
}

TEST(Accuracy, BadLabelThrows) {
  OpHarness h(make_node("accuracy", "acc", {{3}, {1}}), 1);
  set(h.inputs[1], {3});
  const std::string msg = error_message([&] { h.forward(); });
  EXPECT_NE(msg.find("accuracy 'acc'"), std::string::npos) << msg;
}

TEST(Argmax, HandComputed) {
  OpHarness h(make_node("argmax", "pred", {{4}}), 4);
  EXPECT_EQ(h.out().shape, (Shape{4, 1}));
  set(h.inputs[0], {1, 3, 2, 0, /**/ 5, 5, 1, 5, /**/ -1, -2, -3, -0.5f, /**/ 0, std::nanf(""), 9, 1});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{1, 0, 3, 1}));  // ties: first; NaN wins
}

}  // namespace
}  // namespace devmap::test
