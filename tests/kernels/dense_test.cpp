#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/blas.h"
#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

void set(const Buffer& b, const std::vector<float>& v) {
  ASSERT_EQ(b.size(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), b.data());
}

void randomize(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -1, 1);
  for (size_t i = 0; i < h.params.size(); ++i) fill_uniform(span_of(h.params[i]), seed + 1 + i, -1, 1);
}

TEST(Dense, HandComputed) {
  OpHarness h(make_node("dense", "fc", {{2}}, {{"units", int64_t{3}}}), 2);
  set(h.inputs[0], {1, 2, /* sample 1 */ -1, 0.5f});
  set(h.params[0], {1, 0, 0, 1, 1, 1});  // W [3, 2]
  set(h.params[1], {0.5f, -0.5f, 0});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{1.5f, 1.5f, 3, -0.5f, 0, -0.5f}));

  set(h.d_output, {1, 0, 2, /* sample 1 */ 0, 1, -1});
  h.backward();
  // dx = dy W
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{3, 2, -1, 0}));
  // dW = dy^T x
  EXPECT_EQ(to_vector(h.d_params[0]), (std::vector<float>{1, 2, -1, 0.5f, 3, 3.5f}));
  EXPECT_EQ(to_vector(h.d_params[1]), (std::vector<float>{1, 1, 1}));
}

TEST(Dense, Gradients) {
  OpHarness h(make_node("dense", "fc", {{7}}, {{"units", int64_t{5}}}), 3);
  randomize(h, 1);
  expect_gradients(h, 51);
}

TEST(Dense, GradientsNoBias) {
  OpHarness h(make_node("dense", "fc", {{6}}, {{"units", int64_t{4}}, {"bias", false}}), 2);
  randomize(h, 2);
  expect_gradients(h, 52);
}

TEST(Dense, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("dense", "fc", {{7}}, {{"units", int64_t{5}}}), 3);
  randomize(h, 3);
  expect_gradients(h, 53, /*flip_sign=*/true);
}

TEST(Dense, AccumulateAddsParamGradients) {
  OpHarness h(make_node("dense", "fc", {{7}}, {{"units", int64_t{5}}}), 3);
  randomize(h, 4);
  fill_uniform(span_of(h.d_output), 5, -1, 1);
  h.forward();
  h.backward();
  const std::vector<float> dw = to_vector(h.d_params[0]), db = to_vector(h.d_params[1]);
  h.backward(false);
  EXPECT_EQ(to_vector(h.d_params[0]), dw);
  h.backward(true);
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(h.d_params[0].data()[i], 2 * dw[i], 1e-5 * (1 + std::abs(dw[i])));
  for (size_t i = 0; i < db.size(); ++i) EXPECT_FLOAT_EQ(h.d_params[1].data()[i], 2 * db[i]);
}

TEST(Dense, NullInputGradientIsSkipped) {
  OpHarness h(make_node("dense", "fc", {{4}}, {{"units", int64_t{3}}}), 2);
  randomize(h, 6);
  h.want_input_grad = {false};
  std::fill(h.d_inputs[0].data(), h.d_inputs[0].data() + h.d_inputs[0].size(), 7.0f);
  h.forward();
  h.backward();
  for (float v : to_vector(h.d_inputs[0])) EXPECT_EQ(v, 7.0f);
}

// One forward call on a training batch's gradient chunks gives every chunk
// the bits of a call on it alone, on every CPU path, in the GEMM the path
// picks and in each library forced: chunks of 16 and 32 rows (the AVX-512
// path's own GEMM, all rows at once), of 80 (past 64 rows: a library's
// sgemm per chunk); last chunks shorter than the others, with fewer column
// blocks than a whole chunk's (784 -> 256: 4 blocks at 32 rows, 1 at 8).
class DenseForwardChunks : public EveryCpuPath {};

struct ChunkCase {
  int64_t in, units, chunk, batch;
};

void expect_one_call_gives_each_chunk_its_bits(const ChunkCase& c, int threads) {
  OpHarness by_chunk(make_node("dense", "fc", {{c.in}}, {{"units", c.units}}), c.batch, threads);
  randomize(by_chunk, 7);
  OpHarness at_once(by_chunk.node, c.batch, threads);
  std::copy_n(by_chunk.inputs[0].data(), by_chunk.inputs[0].size(), at_once.inputs[0].data());
  for (size_t i = 0; i < by_chunk.params.size(); ++i)
    std::copy_n(by_chunk.params[i].data(), by_chunk.params[i].size(), at_once.params[i].data());
  for (int64_t first = 0; first < c.batch; first += c.chunk)
    by_chunk.forward_rows(first, std::min(c.chunk, c.batch - first));
  at_once.forward_chunks(c.chunk);
  EXPECT_TRUE(same_bits(at_once.output, by_chunk.output))
      << c.in << " -> " << c.units << ", chunks of " << c.chunk << " in " << c.batch << ", " << threads << " threads";
}

constexpr ChunkCase kChunkCases[] = {{50, 20, 16, 40}, {50, 20, 80, 200}, {784, 256, 32, 40}, {784, 256, 80, 150}};

// fn() with the GEMMs the path picks, then with each library forced.
template <class Fn>
void with_each_gemm_choice(const Fn& fn) {
  for (std::optional<GemmLibrary> library :
       {std::optional<GemmLibrary>{}, std::optional{GemmLibrary::kOpenBlas}, std::optional{GemmLibrary::kOneDnn}}) {
    std::optional<cpu::ScopedGemmLibrary> forced;
    if (library) forced.emplace(*library);
    fn();
  }
}

TEST_P(DenseForwardChunks, OneCallGivesEachChunkItsOwnBits) {
  with_each_gemm_choice([] {
    for (const ChunkCase& c : kChunkCases)
      for (int threads : {1, 2}) expect_one_call_gives_each_chunk_its_bits(c, threads);
  });
}

DEVMAP_ON_EVERY_CPU_PATH(DenseForwardChunks);

// One backward call on a training batch's gradient chunks gives each
// chunk's input gradient the bits of a call on it alone and leaves the
// parameter gradients the chunk calls, in order, leave (stored, then added;
// or all added), on every CPU path, in the GEMMs the path picks and in each
// library forced; the same cases as the forward's.
class DenseBackwardChunks : public EveryCpuPath {};

void expect_one_backward_call_gives_each_chunk_its_bits(const ChunkCase& c, int threads, bool accumulate) {
  OpHarness by_chunk(make_node("dense", "fc", {{c.in}}, {{"units", c.units}}), c.batch, threads);
  randomize(by_chunk, 8);
  fill_uniform(span_of(by_chunk.d_output), 9, -1, 1);
  for (Buffer& g : by_chunk.d_params) fill_uniform(span_of(g), 10, -1, 1);
  OpHarness at_once(by_chunk.node, c.batch, threads);
  auto copy = [](const Buffer& from, Buffer& to) { std::copy_n(from.data(), from.size(), to.data()); };
  copy(by_chunk.inputs[0], at_once.inputs[0]);
  copy(by_chunk.d_output, at_once.d_output);
  for (size_t i = 0; i < by_chunk.params.size(); ++i) {
    copy(by_chunk.params[i], at_once.params[i]);
    copy(by_chunk.d_params[i], at_once.d_params[i]);
  }
  for (int64_t first = 0; first < c.batch; first += c.chunk)
    by_chunk.backward_rows(first, std::min(c.chunk, c.batch - first), accumulate || first > 0);
  at_once.backward_chunks(c.chunk, accumulate);
  const std::string what = std::to_string(c.in) + " -> " + std::to_string(c.units) + ", chunks of " +
                           std::to_string(c.chunk) + " in " + std::to_string(c.batch) + ", " + std::to_string(threads) +
                           " threads, accumulate " + std::to_string(accumulate);
  EXPECT_TRUE(same_bits(at_once.d_inputs[0], by_chunk.d_inputs[0])) << "input gradient, " << what;
  EXPECT_TRUE(same_bits(at_once.d_params[0], by_chunk.d_params[0])) << "weight gradient, " << what;
  EXPECT_TRUE(same_bits(at_once.d_params[1], by_chunk.d_params[1])) << "bias gradient, " << what;
}

TEST_P(DenseBackwardChunks, OneCallGivesEachChunkItsOwnBits) {
  with_each_gemm_choice([] {
    for (const ChunkCase& c : kChunkCases)
      for (int threads : {1, 2})
        for (bool accumulate : {false, true})
          expect_one_backward_call_gives_each_chunk_its_bits(c, threads, accumulate);
  });
}

DEVMAP_ON_EVERY_CPU_PATH(DenseBackwardChunks);

}  // namespace
}  // namespace devmap::test
