// The fused multiply-adds are explicit (_mm512_fmadd_ps), so the chains do
// not depend on the compiler contracting `a * b + c` (it does not at every
// optimisation level). Every function here is built for AVX-512.
#include "kernels/cpu/dense_gemm.h"

#include <cstring>

#include "kernels/cpu/cpu_dispatch.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace devmap::cpu {
namespace {

using V16 = __m512;
using V8 = float __attribute__((vector_size(32)));
constexpr int kLanes = 16;

DEVMAP_TARGET_AVX512 DEVMAP_INLINE void load(const float* p, V16& out) {
  out = _mm512_loadu_ps(p);
}

// ((l0 + l8) + (l4 + l12)) + ((l2 + l10) + (l6 + l14)) + ... as dense_gemm.h says.
DEVMAP_TARGET_AVX512 DEVMAP_INLINE float lane_sum(const V16& a) {
  V8 lo, hi;
  std::memcpy(&lo, &a, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&a) + sizeof lo, sizeof hi);
  const V8 h = lo + hi;
  float q[4];
  for (int i = 0; i < 4; ++i) q[i] = h[i] + h[i + 4];
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// acc[r][c] += lanes [k, k + 16) of x row r times those of w row c, where
// xk and wk point at lane k of the first rows and x_row, w_row step a row.
template <int MR, int NR>
DEVMAP_TARGET_AVX512 DEVMAP_INLINE void accumulate_lanes(V16 (&acc)[MR][NR], const float* xk, int64_t x_row,
                                                         const float* wk, int64_t w_row) {
  V16 xv[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) load(xk + r * x_row, xv[r]);
#pragma GCC unroll 8
  for (int c = 0; c < NR; ++c) {
    V16 wv;
    load(wk + c * w_row, wv);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc[r][c] = _mm512_fmadd_ps(xv[r], wv, acc[r][c]);
  }
}

// y for rows [m, m + MR) and units [u, u + NR).
template <int MR, int NR>
DEVMAP_TARGET_AVX512 DEVMAP_INLINE void forward_tile(const DenseOperands& o, const float* bias, float* y, int64_t m,
                                                     int64_t u) {
  const int64_t in = o.in;
  const float* x = o.x + m * in;
  const float* w = o.w + u * in;
  V16 acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + kLanes <= in; k += kLanes) accumulate_lanes<MR, NR>(acc, x + k, in, w + k, in);
  if (k < in) {  // the last partial lanes, zero-padded (0 * 0 leaves a lane as it is)
    const size_t tail = static_cast<size_t>(in - k) * sizeof(float);
    float xs[MR][kLanes] = {}, ws[NR][kLanes] = {};
    for (int r = 0; r < MR; ++r) std::memcpy(xs[r], x + r * in + k, tail);
    for (int c = 0; c < NR; ++c) std::memcpy(ws[c], w + c * in + k, tail);
    accumulate_lanes<MR, NR>(acc, xs[0], kLanes, ws[0], kLanes);
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) {
      const float s = lane_sum(acc[r][c]);
      y[(m + r) * o.units + u + c] = bias != nullptr ? s + bias[u + c] : s;
    }
}

// Tiles of MR rows by NR units (24 accumulators of the 32 registers), then
// single units and single rows. The tiles change the speed, never the bits.
constexpr int kTileRows = 4, kTileUnits = 6;

DEVMAP_TARGET_AVX512 void forward_avx512(const DenseOperands& o, const float* bias, float* y, ColumnRange units) {
  int64_t u = units.begin;
  for (; u + kTileUnits <= units.end; u += kTileUnits) {
    int64_t m = 0;
    for (; m + kTileRows <= o.rows; m += kTileRows) forward_tile<kTileRows, kTileUnits>(o, bias, y, m, u);
    for (; m < o.rows; ++m) forward_tile<1, kTileUnits>(o, bias, y, m, u);
  }
  for (; u < units.end; ++u) {
    int64_t m = 0;
    for (; m + kTileRows <= o.rows; m += kTileRows) forward_tile<kTileRows, 1>(o, bias, y, m, u);
    for (; m < o.rows; ++m) forward_tile<1, 1>(o, bias, y, m, u);
  }
}

}  // namespace

bool dense_gemm_runs() {
  return active_cpu_path() == CpuPath::kAvx512;
}

void dense_gemm_forward(const DenseOperands& o, const float* bias, float* y, ColumnRange units) {
  forward_avx512(o, bias, y, units);
}

}  // namespace devmap::cpu

#else  // no AVX-512 path on this architecture: the dense kernel calls sgemm

namespace devmap::cpu {

bool dense_gemm_runs() {
  return false;
}

void dense_gemm_forward(const DenseOperands&, const float*, float*, ColumnRange) {}

}  // namespace devmap::cpu

#endif
