// max_pool2d, avg_pool2d, global_avg_pool, concat, relu, add,
// flatten/reshape and dropout: the CUDA kernels
// against the CPU kernels. Tolerance: none: these compute the same float
// operations element by element (max, compare, one add or multiply), so the
// values must be equal (NaN matching NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

void randomize(OpHarness& h, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  for (size_t i = 0; i < h.inputs.size(); ++i) fill_uniform(span_of(h.inputs[i]), seed + i, lo, hi);
  fill_uniform(span_of(h.d_output), seed + 200, -1.0f, 1.0f);
}

// Rounds every input to a few levels and clips at 0 (like a relu before the
// pool), so windows hold ties and zeros: the gradient must go to the CPU's
// first maximum.
void make_ties(OpHarness& h) {
  for (Buffer& b : h.inputs)
    for (int64_t i = 0; i < b.size(); ++i) b.data()[i] = std::max(0.0f, std::round(b.data()[i] * 2.0f) / 2.0f);
}

void compare_forward_backward(OpHarness& h, const std::string& what) {
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_equal(g.output(), h.output, what + " forward");
  h.backward();
  g.backward();
  for (size_t i = 0; i < h.inputs.size(); ++i)
    if (h.want_input_grad[i]) expect_equal(g.d_input(i), h.d_inputs[i], what + " d_input " + std::to_string(i));
}

TEST(CudaMaxPool2d, Reference2x2WithTiesMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("max_pool2d", "pool1", {{32, 28, 28}}, {{"kernel", int64_t{2}}}), 4);
  randomize(h, 1);
  make_ties(h);
  compare_forward_backward(h, "pool 2x2");
}

TEST(CudaMaxPool2d, OddSizeMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("max_pool2d", "p", {{3, 7, 9}}, {{"kernel", int64_t{2}}}), 3);
  randomize(h, 2);
  compare_forward_backward(h, "pool 2x2 odd size");
}

TEST(CudaMaxPool2d, OverlappingPaddedWindowsMatchCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("max_pool2d", "p", {{2, 9, 8}},
                        {{"kernel", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}),
              3);
  randomize(h, 3);
  make_ties(h);
  compare_forward_backward(h, "pool 3x3 stride 2 padding 1");
}

TEST(CudaMaxPool2d, OverlappingWindowsWithoutPaddingMatchCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("max_pool2d", "p", {{2, 8, 8}}, {{"kernel", int64_t{3}}, {"stride", int64_t{1}}}), 2);
  randomize(h, 4);
  make_ties(h);
  compare_forward_backward(h, "pool 3x3 stride 1 (cuDNN forward)");
}

TEST(CudaMaxPool2d, NaNWinsItsWindow) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("max_pool2d", "p", {{1, 4, 4}}, {{"kernel", int64_t{2}}}), 1);
  randomize(h, 5);
  h.inputs[0].data()[5] = std::numeric_limits<float>::quiet_NaN();
  compare_forward_backward(h, "pool with a NaN");
}

TEST(CudaMaxPool2d, RecomputesMaximaWithoutTheOutput) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("max_pool2d", "p", {{2, 6, 6}}, {{"kernel", int64_t{2}}}), 2);
  randomize(h, 6);
  make_ties(h);
  h.pass_output_to_backward = false;
  compare_forward_backward(h, "pool backward without y");
}

TEST(CudaRelu, MatchesCpuIncludingNaN) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("relu", "r", {{5, 7}}), 9);
  randomize(h, 7);
  h.inputs[0].data()[3] = std::numeric_limits<float>::quiet_NaN();
  h.inputs[0].data()[4] = 0.0f;
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_equal(g.output(), h.output, "relu forward");
  // Backward reads the forward output; the NaN is left out (the CPU gives
  // 0 there, cuDNN may propagate it).
  h.inputs[0].data()[3] = 0.0f;
  g.sync();
  h.forward();
  g.forward();
  h.backward();
  g.backward();
  expect_equal(g.d_input(0), h.d_inputs[0], "relu backward");
}

TEST(CudaRelu, LargeTensorMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("relu", "r", {{1024}}), 64);
  randomize(h, 8);
  compare_forward_backward(h, "relu");
}

TEST(CudaAvgPool2d, OverlappingPaddedWindowsMatchCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("avg_pool2d", "p", {{3, 9, 8}},
                        {{"kernel", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}),
              3);
  randomize(h, 21);
  compare_forward_backward(h, "avg pool 3x3 stride 2 padding 1");
}

TEST(CudaAvgPool2d, Kernel2MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("avg_pool2d", "p", {{16, 14, 14}}, {{"kernel", int64_t{2}}}), 4);
  randomize(h, 22);
  compare_forward_backward(h, "avg pool 2x2");
}

TEST(CudaGlobalAvgPool, MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("global_avg_pool", "gap", {{64, 7, 7}}), 5);
  randomize(h, 23);
  compare_forward_backward(h, "global_avg_pool");
}

TEST(CudaConcat, ChannelsAndFeaturesMatchCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness maps(make_node("concat", "cat", {{2, 3, 3}, {1, 3, 3}, {4, 3, 3}}), 3);
  randomize(maps, 24);
  compare_forward_backward(maps, "concat channels");
  OpHarness flat(make_node("concat", "cat", {{5}, {7}}), 4);
  randomize(flat, 25);
  flat.want_input_grad = {true, false};
  compare_forward_backward(flat, "concat features, one input gradient");
}

TEST(CudaAdd, MatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("add", "a", {{3, 5}, {3, 5}}), 4);
  randomize(h, 9);
  compare_forward_backward(h, "add");
}

TEST(CudaAdd, OnlyTheWantedInputGradient) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("add", "a", {{6}, {6}}), 2);
  randomize(h, 10);
  h.want_input_grad = {false, true};
  compare_forward_backward(h, "add with one input gradient");
}

TEST(CudaFlattenReshape, CopyLikeCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness f(make_node("flatten", "f", {{4, 3, 3}}), 5);
  randomize(f, 11);
  compare_forward_backward(f, "flatten");
  OpHarness r(make_node("reshape", "r", {{12}}, {{"shape", std::vector<int64_t>{3, 4}}}), 3);
  randomize(r, 12);
  compare_forward_backward(r, "reshape");
}

TEST(CudaDropout, DropsTheCpusElements) {
  DEVMAP_REQUIRE_GPU();
  // An unaligned micro-batch (sample offset 3 of 101 elements per sample,
  // so the first counter is not a multiple of 4) in step 5.
  OpHarness h(make_node("dropout", "drop", {{101}}, {{"rate", 0.3}}), 6);
  h.ctx.step = 5;
  h.ctx.sample_offset = 3;
  h.ctx.batch_total = 16;
  randomize(h, 13);
  compare_forward_backward(h, "dropout training");
}

TEST(CudaDropout, LargeStepAndEvaluation) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("dropout", "d2", {{8, 8}}, {{"rate", 0.5}}), 9);
  h.ctx.step = (int64_t{1} << 33) + 7;  // both counter words of the step
  randomize(h, 14);
  compare_forward_backward(h, "dropout large step");
  h.ctx.training = false;
  compare_forward_backward(h, "dropout evaluation");
}

}  // namespace
}  // namespace devmap::test
