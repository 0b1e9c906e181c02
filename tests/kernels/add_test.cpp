#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

TEST(Add, HandComputed) {
  OpHarness h(make_node("add", "sum", {{3}, {3}}), 1);
  const std::vector<float> a{1, -2, 0.5f}, b{10, 20, -0.5f}, dy{1, 2, 3};
  std::copy(a.begin(), a.end(), h.inputs[0].data());
  std::copy(b.begin(), b.end(), h.inputs[1].data());
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{11, 18, 0}));
  std::copy(dy.begin(), dy.end(), h.d_output.data());
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), dy);
  EXPECT_EQ(to_vector(h.d_inputs[1]), dy);
}

TEST(Add, ShapesMustMatch) {
  EXPECT_THROW(make_node("add", "sum", {{3}, {4}}), Error);
}

TEST(Add, Gradients) {
  OpHarness h(make_node("add", "sum", {{2, 3}, {2, 3}}), 2);
  fill_uniform(span_of(h.inputs[0]), 1, -1, 1);
  fill_uniform(span_of(h.inputs[1]), 2, -1, 1);
  expect_gradients(h, 41);
}

TEST(Add, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("add", "sum", {{2, 3}, {2, 3}}), 2);
  fill_uniform(span_of(h.inputs[0]), 3, -1, 1);
  fill_uniform(span_of(h.inputs[1]), 4, -1, 1);
  expect_gradients(h, 42, /*flip_sign=*/true);
}

}  // namespace
}  // namespace devmap::test
