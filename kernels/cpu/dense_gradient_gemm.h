// The dense layer's gradient GEMMs on the AVX-512 path, computed in place:
// the weight, the input and the gradients are read where they lie, never
// packed into copies. A library GEMM packs its operands on every call; with
// a gradient chunk's 32 rows against the reference CNN's 12 MiB fc1 weight
// that costs about as much as the arithmetic, and a library call per chunk
// reads the weight, and reads and writes the weight's gradient, once a
// chunk. Here one call takes every chunk of a training batch: the weight is
// read once, and each element of its gradient is loaded and stored once
// from memory, its chunks' shares added in order while it is in cache.
//
// Every output is one fixed chain of fused multiply-adds (below), so its
// bits depend only on the operands it is made of: not on how many rows a
// call has, which columns it computes, nor the thread. It runs where
// dense_gemm_runs() (the AVX-512 path).
#pragma once

#include <cstdint>

#include "kernels/cpu/dense_gemm.h"

namespace devmap::cpu {

// The operands of one dense layer's backward: the forward's x [rows, in]
// and w [units, in], and dy [rows, units], the gradient of its output; all
// row-major and dense.
struct DenseGradientOperands {
  DenseOperands forward;
  const float* dy = nullptr;
};

// dx[m, i] = sum_u dy[m, u] w[u, i] for every row m and i in `inputs`; dx
// is [rows, in]. Each output is one chain of fused multiply-adds from zero
// over u = 0, 1, ..., units - 1 in order: s = fma(dy[m, u], w[u, i], s). A
// row's bits depend on its own row of dy alone.
void dense_gemm_input_gradient(const DenseGradientOperands& o, float* dx, ColumnRange inputs);

// The gradient chunks of a training batch: rows [0, rows) in chunks of
// `rows` rows (the last may hold fewer; 0: one chunk of every row), and
// whether the first chunk adds to the gradient there (else it is stored).
struct GradientChunks {
  int64_t rows = 0;
  bool accumulate = false;
};

// dW[u, i] for every u in `units` and every i; dW is [units, in]. Each
// chunk's share of dW[u, i] is one chain of fused multiply-adds from zero
// over the chunk's rows m in order, s = fma(dy[m, u], x[m, i], s), and the
// chunks in order either store their share (the first, unless
// chunks.accumulate) or add it: dW[u, i] = dW[u, i] + s. So a chunk adds
// the bits a call on it alone would, whichever call it is in.
void dense_gemm_weight_gradient(const DenseGradientOperands& o, GradientChunks chunks, float* dw, ColumnRange units);

}  // namespace devmap::cpu
