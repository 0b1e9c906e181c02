// conv2d and dense: the CUDA kernels (cuDNN FMA math, cuBLAS default math,
// no TF32) against the CPU kernels (OpenBLAS), forward and every gradient.
// Tolerance: |gpu - cpu| <= 1e-4 |cpu| + 1e-5 max|cpu| (FP32 sums of up to
// a few thousand products in a different order; TF32 would miss it by
// orders of magnitude).
#include <gtest/gtest.h>

#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

void randomize(OpHarness& h, uint64_t seed) {
  for (size_t i = 0; i < h.inputs.size(); ++i) fill_uniform(span_of(h.inputs[i]), seed + i, -1.0f, 1.0f);
  for (size_t i = 0; i < h.params.size(); ++i) fill_uniform(span_of(h.params[i]), seed + 100 + i, -0.5f, 0.5f);
  fill_uniform(span_of(h.d_output), seed + 200, -1.0f, 1.0f);
}

// Forward, then backward with overwritten and with accumulated parameter
// gradients, on both devices.
void compare_op(OpHarness& h, uint64_t seed) {
  randomize(h, seed);
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_close(g.output(), h.output, kRtol, kAtol, h.node.name + " forward");

  h.backward();
  g.backward();
  for (size_t i = 0; i < h.inputs.size(); ++i)
    if (h.want_input_grad[i]) expect_close(g.d_input(i), h.d_inputs[i], kRtol, kAtol, h.node.name + " d_input");
  for (size_t i = 0; i < h.params.size(); ++i)
    expect_close(g.d_param(i), h.d_params[i], kRtol, kAtol, h.node.name + " d_" + h.node.params[i].name);

  // accumulate: both add a second backward onto the first's gradients.
  h.backward(/*accumulate=*/true);
  g.backward(/*accumulate=*/true);
  for (size_t i = 0; i < h.params.size(); ++i)
    expect_close(g.d_param(i), h.d_params[i], kRtol, kAtol, h.node.name + " accumulated d_" + h.node.params[i].name);
}

TEST(CudaConv2d, ReferenceConv1MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("conv2d", "conv1", {{1, 28, 28}},
                        {{"filters", int64_t{32}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}}),
              8);
  compare_op(h, 1);
}

TEST(CudaConv2d, ReferenceConv2MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("conv2d", "conv2", {{32, 14, 14}},
                        {{"filters", int64_t{64}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}}),
              4);
  compare_op(h, 2);
}

TEST(CudaConv2d, StrideTwoPaddingOneNoBiasMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("conv2d", "c", {{3, 9, 7}},
                        {{"filters", int64_t{5}},
                         {"kernel", int64_t{3}},
                         {"stride", int64_t{2}},
                         {"padding", int64_t{1}},
                         {"bias", false}}),
              3);
  compare_op(h, 3);
}

TEST(CudaConv2d, DilationTwoGroupsTwoMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("conv2d", "c", {{4, 9, 8}},
                        {{"filters", int64_t{6}},
                         {"kernel", int64_t{3}},
                         {"padding", int64_t{2}},
                         {"dilation", int64_t{2}},
                         {"groups", int64_t{2}}}),
              3);
  compare_op(h, 5);
}

TEST(CudaConv2d, DepthwiseStrideTwoMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("conv2d", "c", {{5, 9, 9}},
                        {{"filters", int64_t{5}},
                         {"kernel", int64_t{3}},
                         {"stride", int64_t{2}},
                         {"padding", int64_t{1}},
                         {"groups", int64_t{5}}}),
              4);
  compare_op(h, 6);
}

TEST(CudaConv2d, PointwiseOddBatchMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("conv2d", "c", {{4, 5, 5}}, {{"filters", int64_t{6}}, {"kernel", int64_t{1}}}), 7);
  compare_op(h, 4);
}

TEST(CudaConv2d, NoInputGradientLeavesItUntouched) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("conv2d", "c", {{2, 6, 6}}, {{"filters", int64_t{3}}, {"kernel", int64_t{3}}}), 2);
  h.want_input_grad = {false};
  compare_op(h, 5);
}

TEST(CudaConv2d, WorkspaceIsBoundedAndPlannedOnce) {
  DEVMAP_REQUIRE_GPU();
  const Node n = make_node("conv2d", "c", {{32, 14, 14}},
                           {{"filters", int64_t{64}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}});
  auto k = gpu_env().factory.make_kernel("conv2d");
  const size_t a = k->workspace_bytes(n, 64), b = k->workspace_bytes(n, 64);
  EXPECT_EQ(a, b);
  EXPECT_LE(a, cuda::ConvPlans::kMaxWorkspaceBytes);
}

TEST(CudaDense, ReferenceFc1MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("dense", "fc1", {{3136}}, {{"units", int64_t{1024}}}), 16);
  compare_op(h, 10);
}

TEST(CudaDense, LogitsMatchCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("dense", "logits", {{1024}}, {{"units", int64_t{10}}}), 64);
  compare_op(h, 11);
}

TEST(CudaDense, OddShapesWithoutBiasMatchCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("dense", "d", {{7}}, {{"units", int64_t{3}}, {"bias", false}}), 5);
  compare_op(h, 12);
}

TEST(CudaDense, BiasGradientIsTheCpusExactSum) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("dense", "d", {{33}}, {{"units", int64_t{65}}}), 31);
  randomize(h, 13);
  GpuMirror g(h);
  h.backward();
  g.backward();
  expect_equal(g.d_param(1), h.d_params[1], "dense db (same order, double)");
}

}  // namespace
}  // namespace devmap::test
