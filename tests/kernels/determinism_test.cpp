// Same inputs, seed, step and pool size => same bits. Our own loops never
// split a reduction, so the bits do not even depend on the pool size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/kernels/determinism_util.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

TEST(Determinism, Conv2d) {
  expect_deterministic(make_node("conv2d", "c", {{3, 12, 12}},
                                 {{"filters", int64_t{8}}, {"kernel", int64_t{3}}, {"padding", int64_t{1}}}),
                       6);
  expect_deterministic(
      make_node("conv2d", "c", {{4, 9, 9}}, {{"filters", int64_t{5}}, {"kernel", int64_t{3}}, {"stride", int64_t{2}}}),
      5);
}

TEST(Determinism, Dense) {
  expect_deterministic(make_node("dense", "fc", {{300}}, {{"units", int64_t{70}}}), 33);
}

TEST(Determinism, MaxPool2d) {
  expect_deterministic(make_node("max_pool2d", "p", {{4, 10, 10}}, {{"kernel", int64_t{3}}, {"stride", int64_t{2}}}),
                       6);
}

// A batch of 8 in one call, or as micro-batches of 4 at sample offsets 0 and
// 4, gets the same dropout mask: same output and gradient bits.
TEST(Determinism, DropoutMaskIgnoresTheMicroBatchSplit) {
  const Node node = make_node("dropout", "drop", {{3, 5, 7}}, {{"rate", 0.5}});
  const int64_t per_sample = 3 * 5 * 7;
  OpHarness whole(node, 8, 2);
  whole.ctx.seed = 7;
  whole.ctx.step = 123;
  fill_uniform(span_of(whole.inputs[0]), 1, -1, 1);
  fill_uniform(span_of(whole.d_output), 2, -1, 1);
  whole.forward();
  whole.backward();
  for (int64_t half = 0; half < 2; ++half) {
    OpHarness part(node, 4, 1);
    part.ctx.seed = 7;
    part.ctx.step = 123;
    part.ctx.sample_offset = 4 * half;
    std::copy_n(whole.inputs[0].data() + half * 4 * per_sample, 4 * per_sample, part.inputs[0].data());
    std::copy_n(whole.d_output.data() + half * 4 * per_sample, 4 * per_sample, part.d_output.data());
    part.forward();
    part.backward();
    EXPECT_EQ(std::memcmp(part.output.data(), whole.output.data() + half * 4 * per_sample,
                          static_cast<size_t>(4 * per_sample) * sizeof(float)),
              0);
    EXPECT_EQ(std::memcmp(part.d_inputs[0].data(), whole.d_inputs[0].data() + half * 4 * per_sample,
                          static_cast<size_t>(4 * per_sample) * sizeof(float)),
              0);
  }
}

TEST(GradientChunks, DenseChunkCallsDoNotDependOnTheirBuffer) {
  expect_chunk_calls_independent_of_their_buffer(make_node("dense", "fc", {{300}}, {{"units", int64_t{70}}}));
  expect_chunk_calls_independent_of_their_buffer(make_node("dense", "fc", {{3136}}, {{"units", int64_t{1024}}}));
}

TEST(GradientChunks, Conv2dChunkCallsDoNotDependOnTheirBuffer) {
  const auto k = [](int64_t v) { return AttrValue{v}; };
  // auto: the GEMM algorithm (one channel), Winograd (8 channels, 3x3), and
  // grouped strided GEMM.
  expect_chunk_calls_independent_of_their_buffer(
      make_node("conv2d", "c", {{1, 12, 12}}, {{"filters", k(8)}, {"kernel", k(5)}, {"padding", k(2)}}));
  expect_chunk_calls_independent_of_their_buffer(
      make_node("conv2d", "c", {{8, 9, 9}}, {{"filters", k(8)}, {"kernel", k(3)}, {"padding", k(1)}}));
  expect_chunk_calls_independent_of_their_buffer(
      make_node("conv2d", "c", {{4, 9, 9}}, {{"filters", k(6)}, {"kernel", k(3)}, {"stride", k(2)}, {"groups", k(2)}}));
}

}  // namespace
}  // namespace devmap::test
