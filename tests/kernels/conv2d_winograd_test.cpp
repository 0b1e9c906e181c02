// The Winograd convolution: its matrices against the definition, the whole
// kernel against the GEMM algorithm on the shapes it takes (odd sizes,
// padding up to K-1, partial tiles, several lanes), its gradients, its
// independence of the pool size, and which algorithm `auto` picks.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/base/error.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/winograd.h"
#include "tests/kernels/conv_test_util.h"
#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

// Every test runs on every CPU path (cpu_paths.h).
class ConvWinograd : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(ConvWinograd);

using cpu::Conv2dKernel;

// y = AT [(G g) * (BT d)] is the correlation y_i = sum_k g_k d_(i+k), for
// every F(m, r) with alpha <= 8, in double from the rounded matrices.
TEST(Winograd, MatricesComputeTheCorrelation) {
  for (int m = 1; m <= 7; ++m)
    for (int r = 1; m + r - 1 <= cpu::winograd::kMaxAlpha; ++r) {
      const cpu::winograd::Matrices a = cpu::winograd::toom_cook(m, r);
      ASSERT_EQ(a.alpha, m + r - 1);
      const int n = a.alpha;
      std::vector<double> g(static_cast<size_t>(r)), d(static_cast<size_t>(n)), prod(static_cast<size_t>(n));
      for (int k = 0; k < r; ++k) g[k] = std::sin(1.0 + k);
      for (int k = 0; k < n; ++k) d[k] = std::cos(2.0 + 3 * k);
      for (int j = 0; j < n; ++j) {
        double gg = 0, dd = 0;
        for (int k = 0; k < r; ++k) gg += a.g[j * r + k] * g[k];
        for (int k = 0; k < n; ++k) dd += a.bt[j * n + k] * d[k];
        prod[j] = gg * dd;
      }
      for (int i = 0; i < m; ++i) {
        double y = 0, want = 0;
        for (int j = 0; j < n; ++j) y += a.at[i * n + j] * prod[j];
        for (int k = 0; k < r; ++k) want += g[k] * d[i + k];
        EXPECT_NEAR(y, want, 2e-6 * (1 + std::abs(want))) << "F(" << m << ", " << r << ") output " << i;
      }
    }
}

// The kernels use the compile-time matrices; F(r, m) shares bt with F(m, r),
// so the weight gradient reuses the input transform.
TEST(Winograd, CompileTimeMatricesAndSharedInputTransform) {
  using cpu::winograd::kToomCook;
  using cpu::winograd::toom_cook;
  EXPECT_EQ((kToomCook<4, 5>.bt), toom_cook(4, 5).bt);
  EXPECT_EQ((kToomCook<5, 4>.at), toom_cook(5, 4).at);
  EXPECT_EQ((kToomCook<4, 3>.g), toom_cook(4, 3).g);
  for (auto [m, r] : std::vector<std::array<int, 2>>{{4, 3}, {4, 5}, {4, 4}}) {
    EXPECT_EQ(toom_cook(m, r).bt, toom_cook(r, m).bt);
  }
  // The familiar F(4, 3) input transform (Lavin and Gray, 2016).
  const std::array<float, 6> first_row = {4, 0, -5, 0, 1, 0};
  for (int j = 0; j < 6; ++j) EXPECT_EQ((kToomCook<4, 3>.bt[j]), first_row[j]);
}

void matches_gemm(const Node& node, int64_t batch, int64_t max_lanes, int threads) {
  expect_matches_gemm(node, batch, max_lanes, threads, ConvAlgorithm::kWinograd);
}

TEST_P(ConvWinograd, MatchesGemm) {
  matches_gemm(conv_node(32, 14, 14, 64, 5, 2), 5, 8, 2);       // the reference model's conv2
  matches_gemm(conv_node(8, 9, 11, 8, 3, 1), 3, 8, 1);          // partial tiles, H != W
  matches_gemm(conv_node(8, 7, 7, 16, 3, 0), 13, 3, 2);         // no padding; lanes of 4-5 samples
  matches_gemm(conv_node(16, 6, 5, 8, 5, 4), 2, 8, 1);          // padding K-1: the input gradient pads by 0
  matches_gemm(conv_node(8, 10, 10, 8, 4, 1), 2, 8, 1);         // an even kernel (F(4, 4))
  matches_gemm(conv_node(9, 13, 3, 10, 3, 2, false), 4, 8, 2);  // odd channels and filters, no bias
  // More input-gradient tiles than forward ones: they size the groups.
  matches_gemm(conv_node(8, 8, 8, 8, 5, 0), 3, 8, 1);
  // More samples than one group (WinogradConvLayout::kGroupTiles) in a lane.
  matches_gemm(conv_node(8, 8, 8, 8, 3, 1), 40, 2, 2);
}

TEST_P(ConvWinograd, Gradients) {
  const Node node = conv_node(3, 6, 7, 4, 3, 1);
  OpHarness h(node, 2, 1, std::make_unique<Conv2dKernel>(8, ConvAlgorithm::kWinograd));
  randomize(h, 3);
  expect_gradients(h, 31);
  OpHarness k5(conv_node(2, 5, 6, 3, 5, 2, false), 2, 1, std::make_unique<Conv2dKernel>(8, ConvAlgorithm::kWinograd));
  randomize(k5, 4);
  expect_gradients(k5, 32);
}

TEST_P(ConvWinograd, PoolSizeDoesNotChangeTheBits) {
  expect_pool_size_keeps_the_bits(conv_node(16, 14, 14, 16, 5, 2), 11, ConvAlgorithm::kWinograd);
}

// A batch of no samples leaves no stale lane partials in the weight gradient.
TEST_P(ConvWinograd, EmptyBatchGivesZeroParamGradients) {
  for (ConvAlgorithm algorithm : {ConvAlgorithm::kGemm, ConvAlgorithm::kWinograd}) {
    OpHarness h(conv_node(8, 6, 6, 8, 3, 1), 0, 1, std::make_unique<Conv2dKernel>(8, algorithm));
    std::fill(h.workspace.data(), h.workspace.data() + h.workspace.size(), 7.0f);
    for (Buffer& g : h.d_params) std::fill(g.data(), g.data() + g.size(), 5.0f);
    h.forward();
    h.backward();
    for (const Buffer& g : h.d_params)
      for (float v : to_vector(g)) ASSERT_EQ(v, 0.0f) << static_cast<int>(algorithm);
  }
}

TEST_P(ConvWinograd, AutoPicksWinogradWhereItAppliesAndPaysElseOneDnn) {
  Conv2dKernel k;
  EXPECT_EQ(k.algorithm(conv_node(32, 14, 14, 64, 5, 2)), ConvAlgorithm::kWinograd);
  EXPECT_EQ(k.algorithm(conv_node(8, 10, 10, 8, 4, 1)), ConvAlgorithm::kWinograd);
  // Where Winograd does not apply or pay, and at kernel 3, oneDNN.
  EXPECT_EQ(k.algorithm(conv_node(8, 9, 9, 8, 3, 1)), ConvAlgorithm::kOneDnn);
  EXPECT_EQ(k.algorithm(conv_node(1, 28, 28, 32, 5, 2)), ConvAlgorithm::kOneDnn);  // one channel
  EXPECT_EQ(k.algorithm(conv_node(32, 14, 14, 4, 5, 2)), ConvAlgorithm::kOneDnn);  // four filters
  EXPECT_EQ(k.algorithm(conv_node(32, 14, 14, 8, 1, 0)), ConvAlgorithm::kOneDnn);  // 1x1
  EXPECT_EQ(k.algorithm(conv_node(32, 14, 14, 8, 7, 3)), ConvAlgorithm::kOneDnn);  // 7x7
  EXPECT_EQ(k.algorithm(make_node("conv2d", "c", {{32, 14, 14}},
                                  {{"filters", int64_t{8}}, {"kernel", int64_t{5}}, {"stride", int64_t{2}}})),
            ConvAlgorithm::kOneDnn);
  EXPECT_EQ(k.algorithm(make_node("conv2d", "c", {{32, 14, 14}},
                                  {{"filters", int64_t{32}}, {"kernel", int64_t{5}}, {"dilation", int64_t{2}}})),
            ConvAlgorithm::kOneDnn);
  // Groups: auto falls back to gemm.
  EXPECT_EQ(k.algorithm(make_node("conv2d", "c", {{32, 14, 14}},
                                  {{"filters", int64_t{32}}, {"kernel", int64_t{3}}, {"groups", int64_t{4}}})),
            ConvAlgorithm::kGemm);
  // The attribute overrides auto.
  EXPECT_EQ(
      k.algorithm(make_node("conv2d", "c", {{32, 14, 14}},
                            {{"filters", int64_t{64}}, {"kernel", int64_t{5}}, {"algorithm", std::string("gemm")}})),
      ConvAlgorithm::kGemm);
  EXPECT_EQ(
      k.algorithm(make_node("conv2d", "c", {{1, 14, 14}},
                            {{"filters", int64_t{2}}, {"kernel", int64_t{3}}, {"algorithm", std::string("winograd")}})),
      ConvAlgorithm::kWinograd);
}

TEST_P(ConvWinograd, ImpossibleOrUnknownAlgorithmIsAnInputError) {
  try {
    make_node("conv2d", "c", {{8, 14, 14}},
              {{"filters", int64_t{8}},
               {"kernel", int64_t{3}},
               {"stride", int64_t{2}},
               {"algorithm", std::string("winograd")}});
    FAIL() << "stride 2 winograd was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("stride 2 (needs 1)"), std::string::npos) << e.what();
  }
  for (const auto& [key, why] :
       {std::pair{"dilation", "dilation 2 (needs 1)"}, std::pair{"groups", "groups 2 (needs 1)"}}) {
    try {
      make_node(
          "conv2d", "c", {{8, 14, 14}},
          {{"filters", int64_t{8}}, {"kernel", int64_t{3}}, {key, int64_t{2}}, {"algorithm", std::string("winograd")}});
      FAIL() << key << " 2 winograd was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  try {
    make_node("conv2d", "c", {{8, 14, 14}},
              {{"filters", int64_t{8}}, {"kernel", int64_t{3}}, {"algorithm", std::string("fft")}});
    FAIL() << "an unknown algorithm was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown conv2d algorithm 'fft' (known: auto, gemm, winograd, onednn)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace devmap::test
