// flatten and reshape share one copy kernel.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

TEST(Flatten, CopiesForwardAndBackward) {
  OpHarness h(make_node("flatten", "f", {{2, 2, 3}}), 2);
  EXPECT_EQ(h.out().shape, (Shape{2, 12}));
  fill_uniform(span_of(h.inputs[0]), 1, -1, 1);
  fill_uniform(span_of(h.d_output), 2, -1, 1);
  h.forward();
  h.backward();  // inputs are not kept: backward gets null input data
  EXPECT_TRUE(same_bits(h.output, h.inputs[0]));
  EXPECT_TRUE(same_bits(h.d_inputs[0], h.d_output));
}

TEST(Reshape, CopiesForwardAndBackward) {
  OpHarness h(make_node("reshape", "r", {{12}}, {{"shape", std::vector<int64_t>{3, 2, 2}}}), 3);
  EXPECT_EQ(h.out().shape, (Shape{3, 3, 2, 2}));
  fill_uniform(span_of(h.inputs[0]), 3, -1, 1);
  fill_uniform(span_of(h.d_output), 4, -1, 1);
  h.forward();
  h.backward();
  EXPECT_TRUE(same_bits(h.output, h.inputs[0]));
  EXPECT_TRUE(same_bits(h.d_inputs[0], h.d_output));
}

TEST(Flatten, Gradients) {
  OpHarness h(make_node("flatten", "f", {{2, 3, 2}}), 2);
  fill_uniform(span_of(h.inputs[0]), 5, -1, 1);
  expect_gradients(h, 61);
}

TEST(Flatten, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("flatten", "f", {{2, 3, 2}}), 2);
  fill_uniform(span_of(h.inputs[0]), 6, -1, 1);
  expect_gradients(h, 62, /*flip_sign=*/true);
}

TEST(Reshape, Gradients) {
  OpHarness h(make_node("reshape", "r", {{12}}, {{"shape", std::vector<int64_t>{2, 6}}}), 2);
  fill_uniform(span_of(h.inputs[0]), 7, -1, 1);
  expect_gradients(h, 63);
}

TEST(Reshape, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("reshape", "r", {{12}}, {{"shape", std::vector<int64_t>{2, 6}}}), 2);
  fill_uniform(span_of(h.inputs[0]), 8, -1, 1);
  expect_gradients(h, 64, /*flip_sign=*/true);
}

}  // namespace
}  // namespace devmap::test
