// Same inputs, seed, step and pool size => same bits. Our own loops never
// split a reduction, so the bits do not even depend on the pool size.
#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

// Everything a forward + backward pass writes.
struct Run {
  std::vector<Buffer> buffers;
};

Run run_once(const Node& node, int64_t batch, int threads) {
  OpHarness h(node, batch, threads);
  for (size_t i = 0; i < h.inputs.size(); ++i) fill_uniform(span_of(h.inputs[i]), 1 + i, -1, 1);
  for (size_t i = 0; i < h.params.size(); ++i) fill_uniform(span_of(h.params[i]), 10 + i, -1, 1);
  fill_uniform(span_of(h.d_output), 20, -1, 1);
  h.forward();
  h.backward();
  h.backward(/*accumulate=*/true);
  Run r;
  r.buffers.push_back(std::move(h.output));
  for (Buffer& b : h.d_inputs) r.buffers.push_back(std::move(b));
  for (Buffer& b : h.d_params) r.buffers.push_back(std::move(b));
  return r;
}

void expect_same_bits(const Run& a, const Run& b, const char* what) {
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i)
    EXPECT_TRUE(same_bits(a.buffers[i], b.buffers[i])) << what << " buffer " << i;
}

void expect_deterministic(const Node& node, int64_t batch) {
  const Run one_a = run_once(node, batch, 1), one_b = run_once(node, batch, 1);
  const Run two_a = run_once(node, batch, 2), two_b = run_once(node, batch, 2);
  expect_same_bits(one_a, one_b, "pool 1, twice");
  expect_same_bits(two_a, two_b, "pool 2, twice");
  expect_same_bits(one_a, two_a, "pool 1 vs pool 2");
}

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

}  // namespace
}  // namespace devmap::test
