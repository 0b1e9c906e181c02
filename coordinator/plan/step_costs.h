// The costs a plan predicts step times with (core/plan/step_time.h): times
// measured on this machine by `coordinator calibrate` where the calibration
// cache has them for the op, device and batch (between two measured
// batches: interpolated linearly; beyond them: scaled with the batch), else
// an analytical estimate: FLOPs at the device's rate measured over a whole
// model by a calibration, else at an assumed one (a CPU thread 10 GFLOP/s,
// a GPU 10 TFLOP/s), plus 20 us per op, handoffs 30 us plus 5 GB/s,
// updates 1 ns per parameter. Every use of the estimate is recorded, so a
// plan can say what it did not measure.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/plan/calibration_cache.h"
#include "coordinator/plan/job_memory.h"
#include "core/plan/step_time.h"

namespace devmap {

// The machine as the cache keys it: CPU model, logical cores, the BLAS
// environment and devmap's version.
std::string machine_key_text();
// A device's cache key: the machine, the device's kind and threads, its
// worker program (size and modification time) and that program's
// description of its libraries (`--describe`). Throws devmap::Error when
// the worker program is missing or cannot describe itself.
std::string device_key(const Config& config, const RunOptions& options, const std::string& device);

// The calibration cache's key of how the config's CPU devices slow each
// other down when they compute at once: their device keys (so their
// threads and worker build), from `keys` (device name -> device_key, for
// the devices whose worker runs here); nullopt with fewer than two.
std::optional<std::string> contention_key(const Config& config, const std::map<std::string, std::string>& keys);

// The analytical estimate where nothing was measured (also the planner's
// device rates and links before a calibration).
constexpr double kEstimatedCpuFlopsPerThread = 10e9;  // where the worker reports no FMA peak
constexpr double kEstimatedGpuFlops = 10e12;
// The share of a core's measured FMA peak that an uncalibrated CPU op is
// assumed to reach: the reference CNN's training step reaches 0.48 of it
// on an AVX-512 Xeon (5.4 GFLOP by the definition's count in 48 ms at one
// thread, against a peak of 230 GFLOP/s).
constexpr double kEstimatedShareOfFmaPeak = 0.5;
constexpr double kEstimatedHandoffLatency = 30e-6;
constexpr double kEstimatedHandoffBytesPerSecond = 5e9;
// How fast an offloaded device's state moves between host memory and the
// device (not measured yet): a CPU's memory bandwidth, a GPU's pinned copies.
constexpr double kCpuOffloadCopyBytesPerSecond = 10e9;
constexpr double kGpuOffloadCopyBytesPerSecond = 12e9;

// device_key() when the device's worker can run here (for a GPU,
// `worker_gpu --probe` finds a usable one); otherwise nullopt, with the
// reason in `why`.
std::optional<std::string> usable_device_key(const Config& config, const RunOptions& options, const std::string& device,
                                             std::string& why);

// The compute rate the analytical estimate gives `device` where the
// calibration cache has none: a CPU reaches kEstimatedShareOfFmaPeak of
// its worker's measured FP32 peak per core (`worker_cpu --fma-peak`, which
// caches its probe per machine) on each thread, or
// kEstimatedCpuFlopsPerThread per thread when the worker cannot say; a GPU
// kEstimatedGpuFlops.
double estimated_flops_per_s(const RunOptions& options, const DeviceSpec& device);

// The rate of `device` for ops it has no measured time of: the calibrated
// rate over its whole model where the cache has one for its key (`keys`:
// device name -> device_key, for the devices whose worker runs here), else
// estimated_flops_per_s.
double device_flops_per_s(const CalibrationCache& cache, const std::map<std::string, std::string>& keys,
                          const RunOptions& options, const DeviceSpec& device);

struct PlanCosts {
  StepCosts costs;
  std::string cache_path;
  // "conv1 forward on cpu:0 at batch 16"-style phrases of what was
  // estimated rather than measured, filled as the costs are asked for.
  std::shared_ptr<std::set<std::string>> estimated = std::make_shared<std::set<std::string>>();
};

// The calibrated forward and backward seconds of an op signature on a
// device key at `batch`: measured, interpolated linearly between two
// measured batches, scaled with the batch beyond them; nullopt when the
// cache has no batch of it.
std::optional<OpSeconds> calibrated_op_seconds(const CalibrationCache& cache, const std::string& device_key,
                                               const std::string& signature, int64_t batch);

// options.calibration_path, else default_calibration_path().
std::string calibration_path(const RunOptions& options);

// Costs for `graph` (placed or not) on the config's devices, from the
// cache at calibration_path(options). `config` and `graph` must outlive
// the costs.
PlanCosts plan_costs(const Config& config, const RunOptions& options, const Graph& graph);

// The plan of a run (plan_run_memory) with the costs it needs: for
// micro_batches auto, plan_costs(); `estimated` lists what they did not
// measure.
JobMemory plan_run_memory_with_costs(const Config& config, const RunOptions& options, const PlanInputs& inputs,
                                     int64_t batch, int64_t eval_batch, const std::vector<int>& outputs);

// The predicted time of a step of the run `memory` plans over `partition`
// (its schedule and micro-batches), from plan_costs().
struct RunPrediction {
  double step_seconds = 0;
  std::vector<std::string> estimated;  // what was not measured (empty: all calibrated)
};
RunPrediction predict_run_step(const Config& config, const RunOptions& options, const Graph& graph,
                               const Partition& partition, const JobMemory& memory);

}  // namespace devmap
