// The CPU's vector unit, as the CPU kernels use it: every hot CPU kernel is
// compiled once per path and runs the one active_cpu_path() names, chosen at
// run time from the CPU itself (cpuid), never from the BLAS configuration.
// DEVMAP_CPU_PATH=avx2 or baseline forces a narrower path (a path the CPU
// lacks is an error). In std only, so that the coordinator can check the
// variable before it starts any worker.
#pragma once

#include <array>
#include <string>

namespace devmap {

enum class CpuPath : int {
  kBaseline = 0,  // x86-64's SSE2 (or whatever the compiler targets elsewhere)
  kAvx2 = 1,      // AVX2 and FMA
  kAvx512 = 2,    // AVX-512 F, VL, BW, DQ (vectors of eight floats, 32 registers)
};

// Every path, narrowest first.
inline constexpr std::array<CpuPath, 3> kCpuPaths = {CpuPath::kBaseline, CpuPath::kAvx2, CpuPath::kAvx512};

inline constexpr const char* kCpuPathVariable = "DEVMAP_CPU_PATH";

// "baseline", "avx2", "avx512".
const char* cpu_path_name(CpuPath path);

// Whether this CPU (cpuid, and the OS's saved vector state) runs the path.
bool cpu_supports(CpuPath path);

// The widest path this CPU supports.
CpuPath widest_cpu_path();

// The path DEVMAP_CPU_PATH asks for: unset, empty or "auto" is the widest;
// a name the CPU does not support, or an unknown name, throws devmap::Error
// (invalid input) saying which paths this CPU has.
CpuPath cpu_path_from_environment();

// The path the CPU kernels run: cpu_path_from_environment(), read once (it
// throws as that does), unless a ScopedCpuPath is alive.
CpuPath active_cpu_path();

// "avx512 (AVX-512 present; DEVMAP_CPU_PATH unset)": what runs and why.
std::string describe_cpu_path();

// A test hook: forces the kernels onto `path` (which the CPU must support)
// while it lives. Not thread-safe against kernels running meanwhile; scopes
// nest.
class ScopedCpuPath {
 public:
  explicit ScopedCpuPath(CpuPath path);
  ~ScopedCpuPath();
  ScopedCpuPath(const ScopedCpuPath&) = delete;
  ScopedCpuPath& operator=(const ScopedCpuPath&) = delete;

 private:
  int previous_;
};

}  // namespace devmap
