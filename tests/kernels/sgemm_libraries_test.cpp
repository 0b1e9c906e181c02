// The GEMMs in oneDNN, on every CPU path: sgemm against OpenBLAS in every
// transposition, beta 0 never reading C, and the kernels built on sgemm
// (dense, Winograd and im2col convolutions) with every GEMM in oneDNN: their
// gradients, and the bits kept whatever the pool size and the gradient chunks.
// oneDNN's cases run in a process of their own per path
// (tests/kernels/onednn_paths.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/conv2d.h"
#include "tests/kernels/conv_test_util.h"
#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/determinism_util.h"
#include "tests/kernels/onednn_paths.h"

namespace devmap::test {
namespace {

using cpu::sgemm_in;

class GemmInOneDnn : public EveryOneDnnPath {
 protected:
  void SetUp() override {
    EveryOneDnnPath::SetUp();
    if (IsSkipped()) return;
    every_gemm_.emplace(GemmLibrary::kOneDnn);
  }
  void TearDown() override {
    every_gemm_.reset();
    EveryOneDnnPath::TearDown();
  }

 private:
  std::optional<cpu::ScopedGemmLibrary> every_gemm_;
};
DEVMAP_ON_EVERY_CPU_PATH(GemmInOneDnn);

std::vector<float> uniform(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  fill_uniform(v, seed, -1, 1);
  return v;
}

// C = op(A) op(B) (+ C) of m x n x k in `library`; A and B stored as the
// transpositions say, C pre-filled with `c0`.
std::vector<float> gemm(GemmLibrary library, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        const std::vector<float>& a, const std::vector<float>& b, float beta,
                        const std::vector<float>& c0) {
  std::vector<float> c = c0;
  sgemm_in(library, ta, tb, m, n, k, a.data(), ta ? m : k, b.data(), tb ? k : n, beta, c.data(), n);
  return c;
}

TEST_P(GemmInOneDnn, MatchesOpenBlasInEveryTransposition) {
  struct Shape3 {
    int64_t m, n, k;
  };
  for (const Shape3 s : {Shape3{64, 256, 784}, Shape3{40, 70, 300}, Shape3{7, 5, 3}, Shape3{1, 33, 17}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " ta " +
                     std::to_string(ta) + " tb " + std::to_string(tb));
        const auto a = uniform(static_cast<size_t>(s.m * s.k), 1), b = uniform(static_cast<size_t>(s.k * s.n), 2);
        const auto c0 = uniform(static_cast<size_t>(s.m * s.n), 3);
        // beta 0 must not read C: NaNs there stay out of the result.
        const std::vector<float> nan(c0.size(), std::numeric_limits<float>::quiet_NaN());
        for (float beta : {0.0f, 1.0f}) {
          const auto& start = beta == 0.0f ? nan : c0;
          const auto ours = gemm(GemmLibrary::kOneDnn, ta, tb, s.m, s.n, s.k, a, b, beta, start);
          const auto ref = gemm(GemmLibrary::kOpenBlas, ta, tb, s.m, s.n, s.k, a, b, beta, start);
          // Sums of k products of values in [-1, 1] in another order.
          const double tol = 1e-6 * static_cast<double>(s.k) + 1e-6;
          for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(ours[i], ref[i], tol) << "beta " << beta << " at " << i;
        }
      }
}

TEST_P(GemmInOneDnn, DenseGradientsPoolSizeAndChunks) {
  for (bool bias : {true, false}) {
    OpHarness h(make_node("dense", "fc", {{7}}, {{"units", int64_t{5}}, {"bias", bias}}), 3);
    randomize(h, 1);
    expect_gradients(h, 51);
  }
  OpHarness flipped(make_node("dense", "fc", {{7}}, {{"units", int64_t{5}}}), 3);
  randomize(flipped, 3);
  expect_gradients(flipped, 53, /*flip_sign=*/true);
  expect_deterministic(make_node("dense", "fc", {{300}}, {{"units", int64_t{70}}}), 33);
  expect_chunk_calls_independent_of_their_buffer(make_node("dense", "fc", {{300}}, {{"units", int64_t{70}}}));
  expect_chunk_calls_independent_of_their_buffer(make_node("dense", "fc", {{784}}, {{"units", int64_t{256}}}));
}

TEST_P(GemmInOneDnn, ConvolutionsOnGemmsMatchAndKeepTheBits) {
  const Node winograd = conv_node(8, 9, 9, 8, 3, 1);
  const Node five = conv_node(32, 14, 14, 16, 5, 2);  // the reference model's conv2, fewer filters
  for (const Node& n : {winograd, five}) expect_matches_gemm(n, 3, 8, 2, ConvAlgorithm::kWinograd);
  expect_pool_size_keeps_the_bits(five, 5, ConvAlgorithm::kWinograd);  // auto: Winograd
  expect_chunk_calls_independent_of_their_buffer(five);
  const auto k = [](int64_t v) { return AttrValue{v}; };
  const Node grouped =
      make_node("conv2d", "c", {{4, 9, 9}}, {{"filters", k(6)}, {"kernel", k(3)}, {"stride", k(2)}, {"groups", k(2)}});
  expect_pool_size_keeps_the_bits(grouped, 5, ConvAlgorithm::kGemm);
  expect_chunk_calls_independent_of_their_buffer(grouped);
  OpHarness h(grouped, 2, 1, std::make_unique<cpu::Conv2dKernel>(8, ConvAlgorithm::kGemm));
  randomize(h, 7);
  expect_gradients(h, 57);
}

}  // namespace
}  // namespace devmap::test
