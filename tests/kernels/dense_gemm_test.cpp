// dense_gemm_forward computes the chains kernels/cpu/dense_gemm.h documents,
// bit for bit, and a row's bits do not depend on the call it is in.
#include "kernels/cpu/dense_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

using cpu::ColumnRange;
using cpu::DenseOperands;

struct Dense {
  int64_t rows, in, units;
  std::vector<float> x, w, bias;
  Dense(int64_t r, int64_t i, int64_t u) : rows(r), in(i), units(u), x(r * i), w(u * i), bias(u) {
    fill_uniform(x, 1, -1, 1);
    fill_uniform(w, 2, -1, 1);
    fill_uniform(bias, 3, -1, 1);
  }
  DenseOperands operands() const { return {rows, in, units, x.data(), w.data()}; }
};

// The header's contract, one output at a time with std::fma.
float documented(const Dense& d, int64_t m, int64_t u, bool with_bias) {
  float lanes[16] = {};
  for (int64_t k = 0; k < d.in; ++k) lanes[k % 16] = std::fma(d.x[m * d.in + k], d.w[u * d.in + k], lanes[k % 16]);
  float halves[8], quarters[4];
  for (int l = 0; l < 8; ++l) halves[l] = lanes[l] + lanes[l + 8];
  for (int l = 0; l < 4; ++l) quarters[l] = halves[l] + halves[l + 4];
  const float s = (quarters[0] + quarters[2]) + (quarters[1] + quarters[3]);
  return with_bias ? s + d.bias[u] : s;
}

// GTEST_SKIP returns from the function it is in, so each test says it
// itself (the AVX-512 instructions would end the process on a CPU without).
constexpr const char* kUncovered = "uncovered: dense_gemm runs on the avx512 path only";

TEST(DenseGemm, ForwardIsTheDocumentedChainOfFusedMultiplyAdds) {
  if (!cpu::dense_gemm_runs()) GTEST_SKIP() << kUncovered;
  // 37 inputs: two whole lane blocks and a partial one; 9 rows and 13 units:
  // whole tiles (4 x 6), then single rows and single units. 1100 inputs
  // and 70 rows: long chains ending in partial lanes, more rows than a
  // gradient chunk's.
  for (const Dense& d : {Dense(9, 37, 13), Dense(70, 1100, 13)})
    for (bool with_bias : {false, true})
      for (ColumnRange units : {ColumnRange{0, 13}, ColumnRange{5, 12}}) {
        std::vector<float> y(d.rows * d.units, -7.0f);
        cpu::dense_gemm_forward(d.operands(), with_bias ? d.bias.data() : nullptr, y.data(), units);
        for (int64_t m = 0; m < d.rows; ++m)
          for (int64_t u = 0; u < d.units; ++u) {
            const float want = u >= units.begin && u < units.end ? documented(d, m, u, with_bias) : -7.0f;
            EXPECT_EQ(std::memcmp(&y[m * d.units + u], &want, sizeof want), 0)
                << d.in << " inputs, row " << m << " unit " << u << " bias " << with_bias << ": " << y[m * d.units + u]
                << " vs " << want;
          }
      }
}

TEST(DenseGemm, ARowHasTheSameBitsInAnyCall) {
  if (!cpu::dense_gemm_runs()) GTEST_SKIP() << kUncovered;
  const Dense d(11, 100, 20);
  std::vector<float> all(d.rows * d.units), alone(d.rows * d.units);
  cpu::dense_gemm_forward(d.operands(), d.bias.data(), all.data(), {0, d.units});
  for (int64_t m = 0; m < d.rows; ++m) {
    DenseOperands row = d.operands();
    row.rows = 1;
    row.x = d.x.data() + m * d.in;
    cpu::dense_gemm_forward(row, d.bias.data(), alone.data() + m * d.units, {0, d.units});
  }
  EXPECT_EQ(std::memcmp(all.data(), alone.data(), all.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace devmap::test
