#include "core/exec/cpu_path.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "core/base/error.h"

namespace devmap {
namespace {

// -1: none forced (a ScopedCpuPath sets a path's value).
std::atomic<int> forced{-1};

std::string supported_list() {
  std::string list;
  for (CpuPath p : kCpuPaths)
    if (cpu_supports(p)) list += std::string(list.empty() ? "" : ", ") + cpu_path_name(p);
  return list;
}

}  // namespace

const char* cpu_path_name(CpuPath path) {
  switch (path) {
    case CpuPath::kBaseline: return "baseline";
    case CpuPath::kAvx2: return "avx2";
    case CpuPath::kAvx512: return "avx512";
  }
  return "?";
}

bool cpu_supports(CpuPath path) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (path) {
    case CpuPath::kBaseline: return true;
    case CpuPath::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuPath::kAvx512:
      return cpu_supports(CpuPath::kAvx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return path == CpuPath::kBaseline;
#endif
}

CpuPath widest_cpu_path() {
  CpuPath widest = CpuPath::kBaseline;
  for (CpuPath p : kCpuPaths)
    if (cpu_supports(p)) widest = p;
  return widest;
}

CpuPath cpu_path_from_environment() {
  const char* value = std::getenv(kCpuPathVariable);
  const std::string_view v = value != nullptr ? value : "";
  if (v.empty() || v == "auto") return widest_cpu_path();
  for (CpuPath p : kCpuPaths) {
    if (v != cpu_path_name(p)) continue;
    if (!cpu_supports(p))
      throw_invalid(std::string(kCpuPathVariable) + "=" + std::string(v) +
                    ": this CPU does not support that path (it supports " + supported_list() +
                    "); unset the variable to use the widest");
    return p;
  }
  throw_invalid(std::string(kCpuPathVariable) + "=" + std::string(v) +
                " is not a CPU path: use auto, avx512, avx2 or baseline (this CPU supports " + supported_list() + ")");
}

CpuPath active_cpu_path() {
  const int f = forced.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<CpuPath>(f);
  static const CpuPath from_environment = cpu_path_from_environment();
  return from_environment;
}

std::string describe_cpu_path() {
  const CpuPath p = active_cpu_path();
  const char* value = std::getenv(kCpuPathVariable);
  return std::string(cpu_path_name(p)) + " (widest on this CPU: " + cpu_path_name(widest_cpu_path()) + "; " +
         kCpuPathVariable + (value != nullptr ? std::string("=") + value : std::string(" unset")) + ")";
}

ScopedCpuPath::ScopedCpuPath(CpuPath path) : previous_(forced.load()) {
  if (!cpu_supports(path))
    throw_invalid(std::string("ScopedCpuPath: this CPU does not support ") + cpu_path_name(path));
  forced.store(static_cast<int>(path));
}

ScopedCpuPath::~ScopedCpuPath() {
  forced.store(previous_);
}

}  // namespace devmap
