#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

// Every test runs on every CPU path (cpu_paths.h).
class Relu : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(Relu);

// Values with |x| >= 0.1, away from relu's kink at 0 (the checker moves
// each by 0.01).
void fill_away_from_zero(const Buffer& b, uint64_t seed) {
  fill_uniform(span_of(b), seed, -1.0f, 1.0f);
  for (int64_t i = 0; i < b.size(); ++i) {
    float& v = b.data()[i];
    v = v < 0 ? std::min(v, -0.1f) : std::max(v, 0.1f);
  }
}

TEST_P(Relu, HandComputed) {
  OpHarness h(make_node("relu", "r", {{5}}), 1);
  const std::vector<float> x{-2, -0.0f, 0, 0.5f, 3};
  std::copy(x.begin(), x.end(), h.inputs[0].data());
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{0, 0, 0, 0.5f, 3}));
  const std::vector<float> dy{1, 2, 3, 4, 5};
  std::copy(dy.begin(), dy.end(), h.d_output.data());
  h.backward();  // inputs[0].data is null here: the gradient comes from the output
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{0, 0, 0, 4, 5}));
}

TEST_P(Relu, NanPropagates) {
  OpHarness h(make_node("relu", "r", {{2}}), 1);
  h.inputs[0].data()[0] = std::nanf("");
  h.forward();
  EXPECT_TRUE(std::isnan(h.output.data()[0]));
}

TEST_P(Relu, Gradients) {
  OpHarness h(make_node("relu", "r", {{3, 4, 5}}), 2);
  fill_away_from_zero(h.inputs[0], 1);
  expect_gradients(h, 31);
}

TEST_P(Relu, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("relu", "r", {{3, 4, 5}}), 2);
  fill_away_from_zero(h.inputs[0], 2);
  expect_gradients(h, 32, /*flip_sign=*/true);
}

TEST_P(Relu, LargeTensorOnTwoThreadsMatchesOneThread) {
  // Big enough to be split across the pool.
  const Node node = make_node("relu", "r", {{100000}});
  OpHarness one(node, 2, 1), two(node, 2, 2);
  fill_uniform(span_of(one.inputs[0]), 3, -1, 1);
  fill_uniform(span_of(two.inputs[0]), 3, -1, 1);
  fill_uniform(span_of(one.d_output), 4, -1, 1);
  fill_uniform(span_of(two.d_output), 4, -1, 1);
  for (OpHarness* h : {&one, &two}) {
    h->forward();
    h->backward();
  }
  EXPECT_TRUE(same_bits(one.output, two.output));
  EXPECT_TRUE(same_bits(one.d_inputs[0], two.d_inputs[0]));
}

}  // namespace
}  // namespace devmap::test
