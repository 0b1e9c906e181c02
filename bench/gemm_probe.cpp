// SGEMM probe: GFLOP/s of devmap::cpu::sgemm (OpenBLAS or oneDNN, as
// core/exec/gemm_library.h picks; one thread per call) on the reference model's
// GEMM shapes, as the minimum time over many short runs (so a busy machine
// disturbs it little), and the aggregate SGEMM rate of T threads each
// running its own single-threaded GEMM, which is what the kernels do: the
// "GEMM-bound limit" of bench/compare_pytorch.sh. Its options: kUsage below
// (gemm_probe --help).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "core/exec/cpu_path.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/fma_peak.h"
#include "kernels/cpu/onednn_runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The minimum over `reps` runs of fn().
template <class Fn>
double min_seconds(int reps, const Fn& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

struct Shape {
  const char* name;
  int64_t m, n, k;
};

void table() {
  const Shape shapes[] = {{"conv2 fwd  W*cols", 64, 196, 800},    {"conv2 dx   W^T*dy", 800, 196, 64},
                          {"conv2 dW   dy*cols^T", 64, 800, 196}, {"conv1 fwd  W*cols", 32, 784, 25},
                          {"conv1 dW   dy*cols^T", 32, 25, 784},  {"fc1 fwd (1/4 block)", 64, 256, 3136},
                          {"square 512", 512, 512, 512}};
  devmap::cpu::pin_blas_to_one_thread();
  std::printf("%-22s %6s %6s %6s %12s %s\n", "shape", "M", "N", "K", "openblas_us", "GFLOP/s");
  for (const Shape& s : shapes) {
    const auto a = random_floats(static_cast<size_t>(s.m * s.k), 1),
               b = random_floats(static_cast<size_t>(s.k * s.n), 2);
    std::vector<float> c(static_cast<size_t>(s.m * s.n));
    const double t = min_seconds(200, [&] {
      devmap::cpu::sgemm(false, false, s.m, s.n, s.k, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
    });
    const double flops = 2.0 * static_cast<double>(s.m * s.n * s.k);
    std::printf("%-22s %6ld %6ld %6ld %12.1f %.1f\n", s.name, static_cast<long>(s.m), static_cast<long>(s.n),
                static_cast<long>(s.k), t * 1e6, flops / t * 1e-9);
  }
}

// T threads, each repeating a single-threaded 512^3 OpenBLAS SGEMM on its own
// matrices for `secs`; prints the aggregate GFLOP/s (best 0.25 s window).
void rate(int threads, double secs) {
  constexpr int64_t n = 512;
  devmap::cpu::pin_blas_to_one_thread();
  std::atomic<bool> stop{false};
  std::vector<double> flops_per_thread(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  std::vector<double> best(static_cast<size_t>(threads), 0.0);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const auto a = random_floats(n * n, 1u + static_cast<unsigned>(t)), b = random_floats(n * n, 7);
      std::vector<float> c(n * n);
      while (!stop.load()) {
        const auto t0 = Clock::now();
        int calls = 0;
        while (seconds_since(t0) < 0.25) {
          devmap::cpu::sgemm(false, false, n, n, n, a.data(), n, b.data(), n, 0.0f, c.data(), n);
          ++calls;
        }
        best[static_cast<size_t>(t)] =
            std::max(best[static_cast<size_t>(t)], 2.0 * n * n * n * calls / seconds_since(t0) * 1e-9);
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(secs));
  stop = true;
  for (auto& th : pool) th.join();
  double total = 0;
  for (double b : best) total += b;
  std::printf("%.1f\n", total);
}

constexpr const char* kUsage =
    "usage: gemm_probe [OPTION]\n"
    "  (none)           GFLOP/s of devmap's sgemm, one thread, on the reference model's shapes\n"
    "  --rate T [S]     aggregate GFLOP/s of T threads, each running its own GEMMs (S seconds, default 2)\n"
    "  --blas-info      OpenBLAS's build and the core it picked here (it follows OPENBLAS_CORETYPE)\n"
    "  --cpu-path       the CPU path devmap's kernels run here (DEVMAP_CPU_PATH)\n"
    "  --gemm-info      the library devmap's GEMMs run in here, and why (DEVMAP_GEMM)\n"
    "  --onednn-info    oneDNN's version and the instruction set its kernels run here\n"
    "  --fma-peak       GFLOP/s of one core on the active path (the FMA probe --profile uses, cached)\n";

}  // namespace

static int run(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--gemm-info") == 0) {
    std::printf("%s\n", devmap::cpu::describe_gemm_library().c_str());
    return 0;
  }
  if (argc >= 3 && std::strcmp(argv[1], "--rate") == 0) {
    rate(std::max(1, std::atoi(argv[2])), argc >= 4 ? std::atof(argv[3]) : 2.0);
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--blas-info") == 0) {
    std::printf("%s\n", devmap::cpu::blas_description().c_str());
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--cpu-path") == 0) {
    std::printf("%s\n", devmap::describe_cpu_path().c_str());
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--onednn-info") == 0) {
    std::printf("%s\n", devmap::cpu::onednn_description().c_str());
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--fma-peak") == 0) {
    const devmap::CpuPath path = devmap::active_cpu_path();
    std::printf("%.1f\n", devmap::cpu::cached_fma_peak(path, devmap::cpu::default_fma_peak_cache()) * 1e-9);
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "gemm_probe: unknown option '%s'\n%s", argv[1], kUsage);
    return 2;
  }
  table();
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const devmap::Error& e) {  // a bad DEVMAP_CPU_PATH or DEVMAP_GEMM
    std::fprintf(stderr, "gemm_probe: %s\n", e.what());
    return e.exit_code();
  }
}
