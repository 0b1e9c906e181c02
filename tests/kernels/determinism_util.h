// Determinism checks shared by the kernel tests: a kernel's bits do not
// depend on the pool size, nor a chunk's on the buffer it sits in.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {

// Everything a forward + backward pass writes.
struct Run {
  std::vector<Buffer> buffers;
};

inline Run run_once(const Node& node, int64_t batch, int threads) {
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

inline void expect_same_bits(const Run& a, const Run& b, const char* what) {
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i)
    EXPECT_TRUE(same_bits(a.buffers[i], b.buffers[i])) << what << " buffer " << i;
}

inline void expect_deterministic(const Node& node, int64_t batch) {
  const Run one_a = run_once(node, batch, 1), one_b = run_once(node, batch, 1);
  const Run two_a = run_once(node, batch, 2), two_b = run_once(node, batch, 2);
  expect_same_bits(one_a, one_b, "pool 1, twice");
  expect_same_bits(two_a, two_b, "pool 2, twice");
  expect_same_bits(one_a, two_a, "pool 1 vs pool 2");
}

// The executor calls a kernel once per gradient chunk, on rows of the whole
// batch's buffers (core/exec/executor.h); a micro-batch or a replica calls it on
// the same chunk in buffers of its own. Both give the same bits: the
// outputs, the input gradients, and the parameter gradients the chunks add
// in order. A batch of 40 in chunks of 16, 16 and 8, on 1 and 2 threads,
// overwriting and accumulating. A kernel whose forward takes every chunk at
// once (forward_handles_gradient_chunks) gives the chunk calls' outputs; one
// whose backward does (backward_handles_gradient_chunks) gives their input
// gradients and what they leave in the parameter gradients.
inline void expect_chunk_calls_independent_of_their_buffer(const Node& node) {
  constexpr int64_t kBatch = 40, kChunk = 16;
  for (int threads : {1, 2})
    for (bool accumulate : {false, true}) {
      OpHarness whole(node, kBatch, threads);
      for (size_t i = 0; i < whole.inputs.size(); ++i) fill_uniform(span_of(whole.inputs[i]), 1 + i, -1, 1);
      for (size_t i = 0; i < whole.params.size(); ++i) fill_uniform(span_of(whole.params[i]), 10 + i, -1, 1);
      fill_uniform(span_of(whole.d_output), 20, -1, 1);
      for (size_t i = 0; i < whole.d_params.size(); ++i) fill_uniform(span_of(whole.d_params[i]), 30 + i, -1, 1);
      std::vector<Buffer> running;  // what the separate chunk calls leave in d_params
      for (const Buffer& b : whole.d_params) {
        running.emplace_back(b.size());
        std::copy_n(b.data(), b.size(), running.back().data());
      }
      for (int64_t first = 0; first < kBatch; first += kChunk) {
        const int64_t count = std::min(kChunk, kBatch - first);
        whole.forward_rows(first, count);
        whole.backward_rows(first, count, accumulate || first > 0);
        OpHarness part(node, count, threads);
        auto rows = [&](const Buffer& from, Buffer& to) {
          const int64_t per_sample = from.size() / kBatch;
          std::copy_n(from.data() + first * per_sample, count * per_sample, to.data());
        };
        for (size_t i = 0; i < part.inputs.size(); ++i) rows(whole.inputs[i], part.inputs[i]);
        for (size_t i = 0; i < part.params.size(); ++i)
          std::copy_n(whole.params[i].data(), whole.params[i].size(), part.params[i].data());
        for (size_t i = 0; i < part.d_params.size(); ++i)
          std::copy_n(running[i].data(), running[i].size(), part.d_params[i].data());
        rows(whole.d_output, part.d_output);
        part.ctx.sample_offset = first;
        part.forward();
        part.backward(accumulate || first > 0);
        for (size_t i = 0; i < part.d_params.size(); ++i)
          std::copy_n(part.d_params[i].data(), part.d_params[i].size(), running[i].data());
        const int64_t out_per_sample = whole.output.size() / kBatch;
        EXPECT_EQ(std::memcmp(part.output.data(), whole.output.data() + first * out_per_sample,
                              static_cast<size_t>(count * out_per_sample) * sizeof(float)),
                  0)
            << node.op() << " output, chunk at " << first << ", " << threads << " threads";
        for (size_t i = 0; i < part.d_inputs.size(); ++i) {
          const int64_t per_sample = whole.d_inputs[i].size() / kBatch;
          EXPECT_EQ(std::memcmp(part.d_inputs[i].data(), whole.d_inputs[i].data() + first * per_sample,
                                static_cast<size_t>(count * per_sample) * sizeof(float)),
                    0)
              << node.op() << " input gradient " << i << ", chunk at " << first << ", " << threads << " threads";
        }
      }
      for (size_t i = 0; i < running.size(); ++i)
        EXPECT_TRUE(same_bits(running[i], whole.d_params[i]))
            << node.op() << " parameter gradient " << i << ", " << threads << " threads, accumulate " << accumulate;
      // A kernel given every chunk at once gives each the bits of its call.
      OpHarness at_once(node, kBatch, threads);
      for (size_t i = 0; i < at_once.inputs.size(); ++i)
        std::copy_n(whole.inputs[i].data(), whole.inputs[i].size(), at_once.inputs[i].data());
      for (size_t i = 0; i < at_once.params.size(); ++i)
        std::copy_n(whole.params[i].data(), whole.params[i].size(), at_once.params[i].data());
      if (whole.kernel->forward_handles_gradient_chunks(node)) {
        at_once.forward_chunks(kChunk);
        EXPECT_TRUE(same_bits(at_once.output, whole.output))
            << node.op() << " output of one call on every chunk, " << threads << " threads";
      }
      if (!whole.kernel->backward_handles_gradient_chunks(node)) continue;
      std::copy_n(whole.output.data(), whole.output.size(), at_once.output.data());
      std::copy_n(whole.d_output.data(), whole.d_output.size(), at_once.d_output.data());
      for (size_t i = 0; i < at_once.d_params.size(); ++i) fill_uniform(span_of(at_once.d_params[i]), 30 + i, -1, 1);
      at_once.backward_chunks(kChunk, accumulate);
      for (size_t i = 0; i < at_once.d_inputs.size(); ++i) {
        if (!at_once.want_input_grad[i]) continue;
        EXPECT_TRUE(same_bits(at_once.d_inputs[i], whole.d_inputs[i]))
            << node.op() << " input gradient " << i << " of one call on every chunk, " << threads << " threads";
      }
      for (size_t i = 0; i < at_once.d_params.size(); ++i)
        EXPECT_TRUE(same_bits(at_once.d_params[i], whole.d_params[i]))
            << node.op() << " parameter gradient " << i << " of one call on every chunk, " << threads
            << " threads, accumulate " << accumulate;
    }
}

}  // namespace devmap::test
