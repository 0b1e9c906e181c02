#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

void set(const Buffer& b, const std::vector<float>& v) {
  ASSERT_EQ(b.size(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), b.data());
}

Node avg_node(Shape in, int64_t kernel, int64_t stride, int64_t padding) {
  return make_node("avg_pool2d", "p", {std::move(in)}, {{"kernel", kernel}, {"stride", stride}, {"padding", padding}});
}

TEST(AvgPool2d, HandComputedKernel2) {
  OpHarness h(avg_node({1, 4, 4}, 2, 0, 0), 1);  // stride 0 means stride = kernel
  set(h.inputs[0], {1, 5, 2, 0,                  //
                    3, 3, 8, 6,                  //
                    -1, -2, 6, 6,                //
                    -3, -2, 6, 10});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{3, 4, -2, 7}));
  set(h.d_output, {4, 8, 12, 16});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 1, 2, 2,  //
                                                          1, 1, 2, 2,  //
                                                          3, 3, 4, 4,  //
                                                          3, 3, 4, 4}));
}

TEST(AvgPool2d, PaddingCountsAsZerosAndOverlapsAdd) {
  // kernel 3, stride 2, padding 1 over 3x3: windows rows/cols {-1..1} and {1..3}; every mean divides by 9.
  OpHarness h(avg_node({1, 3, 3}, 3, 2, 1), 1);
  set(h.inputs[0], {9, 9, 9,  //
                    9, 9, 9,  //
                    9, 9, 9});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{4, 4, 4, 4}));  // 4 real pixels of 9 each / 9
  set(h.d_output, {9, 18, 27, 36});
  h.backward();
  // The centre pixel is in all four windows: (9+18+27+36)/9.
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
}

TEST(AvgPool2d, Gradients) {
  OpHarness h(avg_node({3, 7, 6}, 3, 2, 1), 2);
  fill_uniform(span_of(h.inputs[0]), 1, -1, 1);
  expect_gradients(h, 31);
}

TEST(AvgPool2d, GradientsNonOverlapping) {
  OpHarness h(avg_node({2, 6, 6}, 2, 0, 0), 3);
  fill_uniform(span_of(h.inputs[0]), 2, -1, 1);
  expect_gradients(h, 32);
}

TEST(AvgPool2d, FlippedGradientsFailTheCheck) {
  OpHarness h(avg_node({3, 7, 6}, 3, 2, 1), 2);
  fill_uniform(span_of(h.inputs[0]), 3, -1, 1);
  expect_gradients(h, 33, /*flip_sign=*/true);
}

TEST(AvgPool2d, PaddingOverHalfTheKernelIsAnInputError) {
  EXPECT_THROW(avg_node({1, 4, 4}, 2, 1, 2), Error);
}

TEST(GlobalAvgPool, HandComputed) {
  OpHarness h(make_node("global_avg_pool", "gap", {{2, 2, 2}}), 2);
  set(h.inputs[0], {1, 2, 3, 6, -4, 0, 0, 0, /* sample 1 */ 8, 8, 8, 8, 0.5f, 0.5f, 1.5f, 1.5f});
  h.forward();
  EXPECT_EQ(h.node.out_shape, (Shape{2}));
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{3, -1, 8, 1}));
  set(h.d_output, {4, 8, -2, 1});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]),
            (std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, -0.5f, -0.5f, -0.5f, -0.5f, 0.25f, 0.25f, 0.25f, 0.25f}));
}

TEST(GlobalAvgPool, Gradients) {
  OpHarness h(make_node("global_avg_pool", "gap", {{3, 5, 4}}), 2);
  fill_uniform(span_of(h.inputs[0]), 4, -1, 1);
  expect_gradients(h, 34);
}

TEST(GlobalAvgPool, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("global_avg_pool", "gap", {{3, 5, 4}}), 2);
  fill_uniform(span_of(h.inputs[0]), 5, -1, 1);
  expect_gradients(h, 35, /*flip_sign=*/true);
}

TEST(GlobalAvgPool, NeedsAFeatureMap) {
  EXPECT_THROW(make_node("global_avg_pool", "gap", {{16}}), Error);
}

}  // namespace
}  // namespace devmap::test
