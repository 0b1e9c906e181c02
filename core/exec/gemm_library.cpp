#include "core/exec/gemm_library.h"

#include <array>
#include <cstdlib>
#include <string>

#include "core/base/error.h"

namespace devmap {

const char* gemm_library_name(GemmLibrary library) {
  switch (library) {
    case GemmLibrary::kOpenBlas: return "openblas";
    case GemmLibrary::kOneDnn: return "onednn";
  }
  return "?";
}

CpuPath openblas_core_path(std::string_view core) {
  constexpr std::array<std::string_view, 3> kAvx512Cores = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  constexpr std::array<std::string_view, 3> kAvx2Cores = {"Haswell", "Zen", "Excavator"};
  for (std::string_view c : kAvx512Cores)
    if (core == c) return CpuPath::kAvx512;
  for (std::string_view c : kAvx2Cores)
    if (core == c) return CpuPath::kAvx2;
  return CpuPath::kBaseline;
}

GemmLibrary gemm_library_for(GemmUse use, CpuPath path, std::string_view core) {
  if (use == GemmUse::kDenseGradient) return GemmLibrary::kOneDnn;
  return openblas_core_path(core) == path ? GemmLibrary::kOpenBlas : GemmLibrary::kOneDnn;
}

std::optional<GemmLibrary> gemm_library_from_environment() {
  const char* value = std::getenv(kGemmVariable);
  const std::string_view v = value != nullptr ? value : "";
  if (v.empty() || v == "auto") return std::nullopt;
  for (GemmLibrary l : {GemmLibrary::kOpenBlas, GemmLibrary::kOneDnn})
    if (v == gemm_library_name(l)) return l;
  throw_invalid(std::string(kGemmVariable) + "=" + std::string(v) +
                " is not a GEMM library: use auto (OpenBLAS where its core runs the CPU path, else oneDNN), openblas "
                "or onednn");
}

}  // namespace devmap
