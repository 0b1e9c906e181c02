// The GEMM of the CPU kernels, in OpenBLAS or in oneDNN's sgemm as
// core/exec/gemm_library.h chooses, so that only blas.cpp includes <cblas.h> and
// every index conversion is checked once.
#pragma once

#include <cstdint>
#include <string>

#include "core/exec/gemm_library.h"

namespace devmap::cpu {

// Tells OpenBLAS to compute in the calling thread (process-wide).
void pin_blas_to_one_thread();

// OpenBLAS's build and the core it picked on this CPU (it follows
// OPENBLAS_CORETYPE where set; devmap never sets it), e.g.
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64 core Zen".
std::string blas_description();
// The core alone ("Cooperlake", "Haswell").
std::string blas_core_name();
// "OpenBLAS 0.3.21 core Cooperlake".
std::string blas_short_description();

// The library a `use` GEMM runs in, in this process: a ScopedGemmLibrary's
// while one lives, else DEVMAP_GEMM's, else gemm_library_for(use, active
// CPU path, OpenBLAS's core), fixed at the first call (as oneDNN's
// instruction set is).
GemmLibrary gemm_library(GemmUse use = GemmUse::kGeneral);

// Whether a library is forced for every GEMM: DEVMAP_GEMM names one, or a
// ScopedGemmLibrary lives.
bool gemm_library_forced();

// The library and what it runs, as --profile names kernels:
// "openblas:Cooperlake", "onednn:avx512_core".
std::string gemm_kernel_name(GemmUse use = GemmUse::kGeneral);

// "OpenBLAS 0.3.21 core Cooperlake (its core runs the avx512 path); dense
// gradients in oneDNN sgemm, avx512_core", or "oneDNN sgemm, avx512_core
// (OpenBLAS's core Haswell runs avx2, not the avx512 path)", or "...
// (DEVMAP_GEMM=onednn)": what runs the GEMMs and why.
std::string describe_gemm_library();

// C[m,n] = op(A)[m,k] * op(B)[k,n] + beta * C, all row-major with leading
// dimensions lda, ldb, ldc (in elements, of the stored, untransposed
// matrices). beta 0 overwrites C (it is not read), beta 1 accumulates.
// Runs entirely in the calling thread (OpenBLAS and oneDNN are told to use
// one), so the CPU kernels may call sgemm from several pool threads at once
// on disjoint outputs, and the result bits depend only on the inputs, the
// shapes and the library.
// A kGeneral GEMM.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc);
// The same in `library`.
void sgemm_in(GemmLibrary library, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Where any GEMM runs in oneDNN, has oneDNN generate its sgemm kernels now
// (about 30 ms, once per process, on its first sgemm) so that no step pays
// for it; the CPU worker calls it when its plan comes, before any step.
void warm_up_gemms();

// A test hook: runs sgemm in `library` while it lives. Not thread-safe
// against kernels running meanwhile; scopes nest.
class ScopedGemmLibrary {
 public:
  explicit ScopedGemmLibrary(GemmLibrary library);
  ~ScopedGemmLibrary();
  ScopedGemmLibrary(const ScopedGemmLibrary&) = delete;
  ScopedGemmLibrary& operator=(const ScopedGemmLibrary&) = delete;

 private:
  int previous_;
};

}  // namespace devmap::cpu
