// The dense layer's forward GEMM for few rows, computed in place: the weight
// is read where it lies, never packed into a copy. A library GEMM packs the
// whole weight on every call, which costs as much as its arithmetic when a
// call has a gradient chunk's 32 rows against the reference CNN's 12 MiB
// fc1 weight.
//
// Every output is one fixed chain of fused multiply-adds (below), so its
// bits depend on its own row of x and row of w alone: not on how many rows
// a call has, which columns it computes, nor the thread. It runs on the
// AVX-512 path only (dense_gemm_runs()). Built for AVX2 it gained nothing
// on the library (the CNN's fc1, 32 rows, on the Zen 4 with AVX2 forced:
// these 16 lanes as two ymm 44 GFLOP/s, 8 lanes 73-86, oneDNN's avx2 sgemm
// 73-90), and the baseline path has no FMA.
#pragma once

#include <cstdint>

namespace devmap::cpu {

// The operands of one dense layer's forward: x [rows, in], w [units, in]
// (PyTorch's layout), both row-major and dense.
struct DenseOperands {
  int64_t rows = 0, in = 0, units = 0;
  const float* x = nullptr;
  const float* w = nullptr;
};

// A half-open range of output columns, [begin, end).
struct ColumnRange {
  int64_t begin = 0, end = 0;
};

// Whether the active CPU path runs dense_gemm_forward (AVX-512).
bool dense_gemm_runs();

// y[m, u] = sum_k x[m, k] w[u, k] (+ bias[u] when bias is not null), for
// every row m and u in `units`; y is [rows, units]. The sum keeps 16
// lanes: lane l is a chain of fused multiply-adds from zero over k = l,
// l + 16, ... in increasing k (the last, partial, lanes padded with zeros),
// and the lanes are added as ((l0 + l8) + (l4 + l12)) + ((l2 + l10) + (l6 +
// l14)) and so on: halves added lane-wise three times, then the last two
// (the tree batch_norm's sums use). The bias is added last. Only where
// dense_gemm_runs().
void dense_gemm_forward(const DenseOperands& o, const float* bias, float* y, ColumnRange units);

}  // namespace devmap::cpu
