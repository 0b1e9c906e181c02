// Target fma_peak_cache: bytes as the FMA peak file (kernels/cpu/fma_peak.h)
// -> read_fma_peak_cache. A peak it returns is one a core can have; the
// key's own lines never pass on to what is written back.
#include <cmath>
#include <sstream>
#include <string>

#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_targets.h"
#include "kernels/cpu/fma_peak.h"

namespace devmap::fuzz {

void run_fma_peak_cache(std::string_view data) {
  const std::string key = "AMD EPYC|2|avx2";
  std::istringstream in{std::string(data)};
  const cpu::PeakCacheRead r = cpu::read_fma_peak_cache(in, key);
  if (r.peak) FUZZ_CHECK(std::isfinite(*r.peak) && *r.peak >= 1e6 && *r.peak <= 1e14, "a peak a core can have");
  std::istringstream kept(r.other_lines);
  for (std::string line; std::getline(kept, line);)
    FUZZ_CHECK(line.rfind(key + "\t", 0) != 0 || line.find('\t', key.size() + 1) != std::string::npos,
               "the key's line is replaced, not kept");
}

}  // namespace devmap::fuzz
