// Thin wrappers over the OpenBLAS calls the CPU kernels use, so that only
// blas.cpp includes <cblas.h> and every index conversion is checked once.
#pragma once

#include <cstdint>

namespace devmap::cpu {

// C[m,n] = op(A)[m,k] * op(B)[k,n] + beta * C, all row-major with leading
// dimensions lda, ldb, ldc (in elements, of the stored, untransposed
// matrices). beta 0 overwrites C (it is not read), beta 1 accumulates.
// Runs on OpenBLAS's own threads (see set_cpu_threads); for a fixed OpenBLAS
// thread count the result bits depend only on the inputs.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace devmap::cpu
