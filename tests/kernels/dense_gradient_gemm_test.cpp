// dense_gemm_input_gradient and dense_gemm_weight_gradient compute the
// chains kernels/cpu/dense_gradient_gemm.h documents, bit for bit.
#include "kernels/cpu/dense_gradient_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

using cpu::ColumnRange;
using cpu::DenseGradientOperands;
using cpu::GradientChunks;

struct DenseGradient {
  int64_t rows, in, units;
  std::vector<float> x, w, dy;
  DenseGradient(int64_t r, int64_t i, int64_t u) : rows(r), in(i), units(u), x(r * i), w(u * i), dy(r * u) {
    fill_uniform(x, 1, -1, 1);
    fill_uniform(w, 2, -1, 1);
    fill_uniform(dy, 3, -1, 1);
  }
  DenseGradientOperands operands() const { return {{rows, in, units, x.data(), w.data()}, dy.data()}; }
};

// The header's contracts, one output at a time with std::fma.
float documented_input_gradient(const DenseGradient& d, int64_t m, int64_t i) {
  float s = 0.0f;
  for (int64_t u = 0; u < d.units; ++u) s = std::fma(d.dy[m * d.units + u], d.w[u * d.in + i], s);
  return s;
}

float documented_weight_gradient(const DenseGradient& d, GradientChunks chunks, float held, int64_t u, int64_t i) {
  const int64_t chunk = chunks.rows > 0 ? chunks.rows : std::max<int64_t>(d.rows, 1);
  for (int64_t first = 0; first == 0 || first < d.rows; first += chunk) {
    float s = 0.0f;
    for (int64_t m = first; m < std::min(d.rows, first + chunk); ++m)
      s = std::fma(d.dy[m * d.units + u], d.x[m * d.in + i], s);
    held = first == 0 && !chunks.accumulate ? s : held + s;
  }
  return held;
}

bool same_float(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

constexpr const char* kUncovered = "uncovered: dense_gradient_gemm runs on the avx512 path only";

// 11 rows: a tile of 8, then single rows; 70 units: a block of 64 and one
// of 6 (the chains resume from the partial sums stored in dx); 37 and 100
// inputs: a tile of 3 vectors whose last is partial, whole tiles and a
// partial single vector; the whole range and a part.
TEST(DenseGradientGemm, InputGradientIsTheDocumentedChainOfFusedMultiplyAdds) {
  if (!cpu::dense_gemm_runs()) GTEST_SKIP() << kUncovered;
  for (int64_t in : {37, 100}) {
    const DenseGradient d(11, in, 70);
    for (ColumnRange inputs : {ColumnRange{0, in}, ColumnRange{5, in - 3}}) {
      std::vector<float> dx(d.rows * d.in, -7.0f);
      cpu::dense_gemm_input_gradient(d.operands(), dx.data(), inputs);
      for (int64_t m = 0; m < d.rows; ++m)
        for (int64_t i = 0; i < d.in; ++i) {
          const float want = i >= inputs.begin && i < inputs.end ? documented_input_gradient(d, m, i) : -7.0f;
          EXPECT_TRUE(same_float(dx[m * d.in + i], want))
              << in << " inputs, row " << m << " input " << i << ": " << dx[m * d.in + i] << " vs " << want;
        }
    }
  }
}

// 13 units: a tile of 8, then single units; chunks of 4 in 11 rows (the
// last of 3), one chunk of every row (0), and no rows (one empty chunk);
// stored and accumulated; the whole range of units and a part.
TEST(DenseGradientGemm, WeightGradientAddsEachChunksChainInOrder) {
  if (!cpu::dense_gemm_runs()) GTEST_SKIP() << kUncovered;
  for (int64_t rows : {11, 0})
    for (int64_t in : {37, 100}) {
      const DenseGradient d(rows, in, 13);
      std::vector<float> held(d.units * d.in);
      fill_uniform(held, 4, -1, 1);
      for (int64_t chunk : {4, 0})
        for (bool accumulate : {false, true})
          for (ColumnRange units : {ColumnRange{0, 13}, ColumnRange{2, 12}}) {
            const GradientChunks chunks{chunk, accumulate};
            std::vector<float> dw(held);
            cpu::dense_gemm_weight_gradient(d.operands(), chunks, dw.data(), units);
            for (int64_t u = 0; u < d.units; ++u)
              for (int64_t i = 0; i < d.in; ++i) {
                const float before = held[u * d.in + i];
                const bool inside = u >= units.begin && u < units.end;
                const float want = inside ? documented_weight_gradient(d, chunks, before, u, i) : before;
                EXPECT_TRUE(same_float(dw[u * d.in + i], want))
                    << rows << " rows, " << in << " inputs, chunks of " << chunk << ", accumulate " << accumulate
                    << ", unit " << u << " input " << i << ": " << dw[u * d.in + i] << " vs " << want;
              }
          }
    }
}

}  // namespace
}  // namespace devmap::test
