// Which library runs the CPU kernels' GEMMs. OpenBLAS runs them where the
// core it picked (it follows OPENBLAS_CORETYPE, which is the user's and which
// devmap never sets) computes on the active CPU path's vector unit; oneDNN's
// sgemm, capped at that path's instruction set, runs them where it does not
// (OpenBLAS held to Haswell on an AVX-512 CPU, or DEVMAP_CPU_PATH forcing a
// path narrower than OpenBLAS's core). So the GEMMs, too, follow the CPU.
// The dense layer's gradients (dW = dy^T x, dx = dy W) run in oneDNN
// wherever: it computes them faster than OpenBLAS on every shape measured,
// while OpenBLAS is the faster for the forward's x W^T and the Winograd
// convolution's GEMMs (bench/README.md has the figures).
// The dense forward with few rows runs devmap's own GEMM on the AVX-512
// path (kernels/cpu/dense_gemm.h) unless a library is forced.
// DEVMAP_GEMM=openblas or onednn forces one library for every GEMM. In std only, so that the
// coordinator can check the variable before it starts any worker.
#pragma once

#include <optional>
#include <string_view>

#include "core/exec/cpu_path.h"

namespace devmap {

enum class GemmLibrary : int { kOpenBlas = 0, kOneDnn = 1 };

// What a GEMM computes, as far as the choice goes.
enum class GemmUse : int { kGeneral = 0, kDenseGradient = 1 };

inline constexpr const char* kGemmVariable = "DEVMAP_GEMM";

// "openblas", "onednn".
const char* gemm_library_name(GemmLibrary library);

// The CPU path whose vector unit an OpenBLAS core computes on: avx512 for
// SkylakeX, Cooperlake and SapphireRapids, avx2 for Haswell, Zen and
// Excavator, the baseline for every other core (names as
// openblas_get_corename() gives them).
CpuPath openblas_core_path(std::string_view core);

// The library for a `use` GEMM on `path` when OpenBLAS picked `core`:
// oneDNN for the dense gradients; else OpenBLAS where openblas_core_path(core)
// is `path`, oneDNN otherwise.
GemmLibrary gemm_library_for(GemmUse use, CpuPath path, std::string_view core);

// The library DEVMAP_GEMM forces: none when unset, empty or "auto"; an
// unknown name throws devmap::Error (invalid input) naming the choices.
std::optional<GemmLibrary> gemm_library_from_environment();

}  // namespace devmap
