#include "kernels/cpu/fma_peak.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/cpu_dispatch.h"

namespace devmap::cpu {
namespace {

// FLOP/s a core's peak can have: a cached value outside is measured again.
constexpr double kLeastPeak = 1e6, kMostPeak = 1e14;

using Clock = std::chrono::steady_clock;

// Each probe runs `iterations` rounds over its independent accumulators
// and returns the FLOPs done; the sum of the accumulators is stored so the
// loop is not optimised away.
volatile float sink;

#if defined(__x86_64__) && defined(__GNUC__)
// 16 zmm accumulators: two FMA pipes of latency 4 need at least 8 in flight.
DEVMAP_TARGET_AVX512 double probe_avx512(int64_t iterations) {
  constexpr int kAcc = 16;
  __m512 acc[kAcc];
  for (int a = 0; a < kAcc; ++a) acc[a] = _mm512_set1_ps(static_cast<float>(a) * 1e-3f);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 16
    for (int a = 0; a < kAcc; ++a) acc[a] = _mm512_fmadd_ps(acc[a], x, y);
  __m512 s = acc[0];
  for (int a = 1; a < kAcc; ++a) s = _mm512_add_ps(s, acc[a]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  sink = lanes[0];
  return 2.0 * 16 * kAcc * static_cast<double>(iterations);
}

// 12 ymm accumulators (of 16 registers).
DEVMAP_TARGET_AVX2 double probe_avx2(int64_t iterations) {
  constexpr int kAcc = 12;
  __m256 acc[kAcc];
  for (int a = 0; a < kAcc; ++a) acc[a] = _mm256_set1_ps(static_cast<float>(a) * 1e-3f);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 12
    for (int a = 0; a < kAcc; ++a) acc[a] = _mm256_fmadd_ps(acc[a], x, y);
  __m256 s = acc[0];
  for (int a = 1; a < kAcc; ++a) s = _mm256_add_ps(s, acc[a]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  sink = lanes[0];
  return 2.0 * 8 * kAcc * static_cast<double>(iterations);
}

// SSE2: a multiply and an add per element (no FMA), 6 chains of each.
double probe_baseline(int64_t iterations) {
  constexpr int kAcc = 6;
  __m128 acc[kAcc], prod[kAcc];
  for (int a = 0; a < kAcc; ++a) acc[a] = prod[a] = _mm_set1_ps(static_cast<float>(a) * 1e-3f);
  const __m128 x = _mm_set1_ps(0.999999f), y = _mm_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 6
    for (int a = 0; a < kAcc; ++a) {
      prod[a] = _mm_mul_ps(prod[a], x);
      acc[a] = _mm_add_ps(acc[a], y);
    }
  __m128 s = _mm_add_ps(acc[0], prod[0]);
  for (int a = 1; a < kAcc; ++a) s = _mm_add_ps(s, _mm_add_ps(acc[a], prod[a]));
  sink = _mm_cvtss_f32(s);
  return 2.0 * 4 * kAcc * static_cast<double>(iterations);
}
#else
double probe_baseline(int64_t iterations) {
  float acc[8] = {}, prod[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  for (int64_t i = 0; i < iterations; ++i)
    for (int a = 0; a < 8; ++a) {
      prod[a] *= 0.999999f;
      acc[a] += 1e-7f;
    }
  sink = acc[0] + prod[0];
  return 2.0 * 8 * static_cast<double>(iterations);
}
#endif

double probe(CpuPath path, int64_t iterations) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (path) {
    case CpuPath::kAvx512: return probe_avx512(iterations);
    case CpuPath::kAvx2: return probe_avx2(iterations);
    case CpuPath::kBaseline: break;
  }
#else
  (void)path;
#endif
  return probe_baseline(iterations);
}

std::string cpuinfo_field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && line.find_first_not_of(" \t", key.size()) == colon)
      return line.substr(std::min(line.size(), colon + 2));
  }
  return "?";
}

}  // namespace

double measure_fma_peak(CpuPath path) {
  // Windows of 20000 rounds (~1 ms); the best of 100 ignores the moments
  // another process had the core.
  constexpr int64_t kIterations = 20000;
  double best = 0;
  probe(path, kIterations);  // warm-up: clocks up, and AVX-512 units powered
  for (int w = 0; w < 100; ++w) {
    const auto t0 = Clock::now();
    const double flops = probe(path, kIterations);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (secs > 0) best = std::max(best, flops / secs);
  }
  return best;
}

std::string cpu_cache_key(CpuPath path) {
  std::ifstream f("/proc/cpuinfo");
  std::stringstream text;
  text << f.rdbuf();
  const std::string t = text.str();
  return cpuinfo_field(t, "model name") + " family " + cpuinfo_field(t, "cpu family") + " model " +
         cpuinfo_field(t, "model") + " stepping " + cpuinfo_field(t, "stepping") + "/" + cpu_path_name(path);
}

std::string default_fma_peak_cache() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/devmap/fma_peak.tsv";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/devmap/fma_peak.tsv";
  return {};
}

PeakCacheRead read_fma_peak_cache(std::istream& in, const std::string& key) {
  PeakCacheRead r;
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos) continue;
    if (line.compare(0, tab, key) == 0) {
      // A value no machine measures (0, a denormal, infinite, garbage) is
      // measured again and replaces the line.
      char* end = nullptr;
      const double v = std::strtod(line.c_str() + tab + 1, &end);
      if (*end == '\0' && std::isfinite(v) && v >= kLeastPeak && v <= kMostPeak) r.peak = v;
      continue;
    }
    r.other_lines += line + "\n";
  }
  return r;
}

double cached_fma_peak(CpuPath path, const std::string& cache_file) {
  if (cache_file.empty()) return measure_fma_peak(path);
  // Only a regular file is read (a FIFO there would block this forever).
  std::error_code type_ec;
  const auto type = std::filesystem::symlink_status(cache_file, type_ec).type();
  if (type != std::filesystem::file_type::regular && type != std::filesystem::file_type::not_found)
    return measure_fma_peak(path);
  const std::string key = cpu_cache_key(path);
  std::string lines;
  {
    std::ifstream in(cache_file);
    const PeakCacheRead read = read_fma_peak_cache(in, key);
    if (read.peak) return *read.peak;
    lines = read.other_lines;
  }
  const double peak = measure_fma_peak(path);
  // Written whole to a temporary file, then renamed: concurrent workers
  // never read a torn file (one of their lines may be lost, and measured
  // again next time).
  std::error_code ec;
  const std::filesystem::path file(cache_file);
  std::filesystem::create_directories(file.parent_path(), ec);
  const std::string tmp = cache_file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << lines << key << '\t' << peak << '\n';
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return peak;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return peak;
}

}  // namespace devmap::cpu
