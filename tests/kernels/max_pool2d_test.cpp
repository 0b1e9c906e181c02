#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

// Every test runs on every CPU path (cpu_paths.h).
class MaxPool2d : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(MaxPool2d);

void set(const Buffer& b, const std::vector<float>& v) {
  ASSERT_EQ(b.size(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), b.data());
}

// Distinct values 0.05 apart in a shuffled order: no two elements of a window
// can swap places under the checker's +-0.01 perturbation, so max pooling is
// differentiable at every point checked.
void fill_distinct(const Buffer& b, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(b.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(i) - 1.0f;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  set(b, v);
}

Node pool_node(Shape in, int64_t kernel, int64_t stride, int64_t padding) {
  return make_node("max_pool2d", "p", {std::move(in)}, {{"kernel", kernel}, {"stride", stride}, {"padding", padding}});
}

TEST_P(MaxPool2d, HandComputedKernel2) {
  OpHarness h(pool_node({1, 4, 4}, 2, 0, 0), 1);  // stride 0 means stride = kernel
  set(h.inputs[0], {1, 5, 2, 0,                   //
                    3, 4, 8, 7,                   //
                    -1, -2, 6, 6,                 //
                    -3, -4, 6, 9});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{5, 8, -1, 9}));
  set(h.d_output, {10, 20, 30, 40});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{0, 10, 0, 0,  //
                                                          0, 0, 20, 0,  //
                                                          30, 0, 0, 0,  //
                                                          0, 0, 0, 40}));
}

TEST_P(MaxPool2d, HandComputedStrideAndPadding) {
  // kernel 3, stride 2, padding 1 over 3x3: windows rows/cols {-1..1} and {1..3}.
  OpHarness h(pool_node({1, 3, 3}, 3, 2, 1), 1);
  set(h.inputs[0], {-1, -2, -3,  //
                    -4, -5, -6,  //
                    -7, -8, -9});
  h.forward();
  // Padding is -inf, not 0: all outputs are real (negative) pixels.
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{-1, -2, -4, -5}));
  set(h.d_output, {1, 2, 3, 4});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 2, 0, 3, 4, 0, 0, 0, 0}));
}

TEST_P(MaxPool2d, TiesGoToTheFirstMaximumAndOverlapsAdd) {
  // kernel 2, stride 1: overlapping windows over a constant plane. Each
  // window's first element (row-major) takes its gradient.
  OpHarness h(pool_node({1, 3, 3}, 2, 1, 0), 1);
  set(h.inputs[0], std::vector<float>(9, 2.0f));
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{2, 2, 2, 2}));
  set(h.d_output, {1, 10, 100, 1000});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 10, 0, 100, 1000, 0, 0, 0, 0}));

  set(h.inputs[0], {0, 7, 7,  //
                    7, 7, 0,  //
                    0, 0, 0});
  h.forward();
  h.backward();
  // Window (0,0) {0,7,7,7} -> (0,1); (0,1) {7,7,7,0} -> (0,1); (1,0) {7,7,0,0} -> (1,0); (1,1) {7,0,0,0} -> (1,1).
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{0, 11, 0, 100, 1000, 0, 0, 0, 0}));
}

TEST_P(MaxPool2d, NanPropagates) {
  OpHarness h(pool_node({1, 2, 2}, 2, 0, 0), 1);
  set(h.inputs[0], {1, std::nanf(""), 3, 2});
  h.forward();
  EXPECT_TRUE(std::isnan(h.output.data()[0]));
}

// The first maximum in row-major window order decides the output's bits:
// which zero of a +-0 tie, which NaN of several.
TEST_P(MaxPool2d, Kernel2FirstMaximumBits) {
  OpHarness h(pool_node({1, 2, 6}, 2, 0, 0), 1);
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0x7fc00002u);
  set(h.inputs[0], {-0.0f, 0.0f, 1, nan_a, 0.0f, -0.0f,  //
                    0.0f, -0.0f, nan_b, 2, -0.0f, -0.0f});
  h.forward();
  EXPECT_EQ(std::bit_cast<uint32_t>(h.output.data()[0]), std::bit_cast<uint32_t>(-0.0f));
  EXPECT_EQ(std::bit_cast<uint32_t>(h.output.data()[1]), 0x7fc00001u);
  EXPECT_EQ(std::bit_cast<uint32_t>(h.output.data()[2]), std::bit_cast<uint32_t>(0.0f));
  set(h.d_output, {1, 2, 3});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_P(MaxPool2d, GradientsKernel2) {
  OpHarness h(pool_node({3, 6, 6}, 2, 0, 0), 2);
  fill_distinct(h.inputs[0], 1);
  expect_gradients(h, 21);
}

TEST_P(MaxPool2d, GradientsStrideNotKernelWithPadding) {
  OpHarness h(pool_node({2, 7, 6}, 3, 2, 1), 2);
  fill_distinct(h.inputs[0], 2);
  expect_gradients(h, 22);
}

TEST_P(MaxPool2d, GradientsOverlappingWindows) {
  OpHarness h(pool_node({2, 5, 5}, 3, 1, 1), 2);
  fill_distinct(h.inputs[0], 3);
  expect_gradients(h, 23);
}

// Backward uses the forward output when the executor passes it (the schema
// keeps it), and recomputes the maxima otherwise: same bits. The 2x2
// stride-2 node takes the dedicated non-overlapping path with the output.
TEST_P(MaxPool2d, BackwardWithOrWithoutTheOutputAgrees) {
  for (const Node& node :
       {pool_node({3, 9, 8}, 3, 2, 1), pool_node({2, 6, 6}, 2, 1, 0), pool_node({2, 6, 7}, 2, 0, 0)}) {
    OpHarness a(node, 2), b(node, 2);
    a.pass_output_to_backward = false;
    b.pass_output_to_backward = true;
    for (OpHarness* h : {&a, &b}) {
      fill_uniform(span_of(h->inputs[0]), 1, -1, 1);
      h->inputs[0].data()[5] = h->inputs[0].data()[6];  // a tie
      h->inputs[0].data()[20] = std::nanf("");
      fill_uniform(span_of(h->d_output), 2, -1, 1);
      h->forward();
      h->backward();
    }
    EXPECT_TRUE(same_bits(a.d_inputs[0], b.d_inputs[0]));
  }
}

// Wide rows exercise the backward's column segments (256 outputs each).
TEST_P(MaxPool2d, GradientsWideRows) {
  OpHarness h(pool_node({1, 2, 600}, 2, 1, 1), 1);
  fill_distinct(h.inputs[0], 5);
  expect_gradients(h, 25);
}

// With the relu before it fused into its backward (relu_input_gradient),
// the pool's input gradient has the bits of the relu kernel's backward run on
// the unfused pool's: for the 2x2 loops (odd sizes too) and the general ones
// (overlapping windows, whose sums the relu masks afterwards), on inputs
// that are a relu's output (zeros, ties of zeros, and a NaN).
TEST_P(MaxPool2d, FusedReluGradientIsTheRelusBackward) {
  for (const Node& node : {pool_node({3, 14, 14}, 2, 0, 0), pool_node({2, 7, 9}, 2, 0, 0),
                           pool_node({2, 9, 8}, 3, 2, 1), pool_node({2, 6, 6}, 2, 1, 0)}) {
    OpHarness fused(node, 2), plain(node, 2);
    fused.relu_input_gradient = true;
    for (OpHarness* h : {&fused, &plain}) {
      fill_uniform(span_of(h->inputs[0]), 1, -1, 1);
      float* x = h->inputs[0].data();
      for (int64_t i = 0; i < h->inputs[0].size(); ++i) x[i] = std::max(x[i], 0.0f);  // a relu's output
      x[7] = std::nanf("");
      fill_uniform(span_of(h->d_output), 2, -1, 1);
      h->forward();
      h->backward();
    }
    OpHarness relu(make_node("relu", "r", {node.input_shapes[0]}, {}), 2);
    std::copy(plain.inputs[0].data(), plain.inputs[0].data() + plain.inputs[0].size(), relu.output.data());
    std::copy(plain.d_inputs[0].data(), plain.d_inputs[0].data() + plain.d_inputs[0].size(), relu.d_output.data());
    relu.backward();
    EXPECT_TRUE(same_bits(fused.d_inputs[0], relu.d_inputs[0])) << node.input_shapes[0].numel() << " inputs a sample";
    EXPECT_FALSE(same_bits(fused.d_inputs[0], plain.d_inputs[0])) << "the relu masked nothing";
  }
}

TEST_P(MaxPool2d, FlippedGradientsFailTheCheck) {
  OpHarness h(pool_node({2, 7, 6}, 3, 2, 1), 2);
  fill_distinct(h.inputs[0], 4);
  expect_gradients(h, 24, /*flip_sign=*/true);
}

}  // namespace
}  // namespace devmap::test
