// The FP32 peak of one core on a CPU path, measured: a short loop of
// independent multiply-adds (FMA on AVX2 and AVX-512, a multiply and an add
// on the baseline) in the calling thread, the best of several short windows.
// --profile reports each op's GFLOP/s against it.
#pragma once

#include <istream>
#include <optional>
#include <string>

#include "core/exec/cpu_path.h"

namespace devmap::cpu {

// FLOP/s of one core on `path` (which the CPU must support), measured now
// (about 0.1 s).
double measure_fma_peak(CpuPath path);

// measure_fma_peak(path), cached in `cache_file` (one "KEY<TAB>FLOP/s" line
// per CPU and path, KEY from cpu_cache_key) so that only the first run on a
// machine pays for it; an unreadable or unwritable file only costs the
// measurement. An empty cache_file measures every time.
double cached_fma_peak(CpuPath path, const std::string& cache_file);

// The peak file's line for `key` when its value is one a core can have
// (finite, 1e6 to 1e14 FLOP/s), and every other line, as read from `in`.
struct PeakCacheRead {
  std::optional<double> peak;
  std::string other_lines;
};
PeakCacheRead read_fma_peak_cache(std::istream& in, const std::string& key);

// "<model name> family F model M stepping S/<path>", from /proc/cpuinfo.
std::string cpu_cache_key(CpuPath path);

// $XDG_CACHE_HOME/devmap/fma_peak.tsv, else $HOME/.cache/devmap/fma_peak.tsv,
// else empty (no cache).
std::string default_fma_peak_cache();

}  // namespace devmap::cpu
