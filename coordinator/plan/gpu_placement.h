// Whether the GPUs a config places ops on can run here. The coordinator
// never links CUDA: it asks `worker_gpu --probe --device gpu:N` (exit 0:
// usable, 3: no usable GPU, with the reason on stdout). When a GPU is not
// usable the run fails with that reason, unless the config says
// `allow_soft_placement: true`: then its ops move to a CPU device and each
// move is logged.
#pragma once

#include <iosfwd>
#include <string>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"

namespace devmap {

struct GpuProbe {
  bool usable = false;
  std::string text;  // what the probe printed: the device and versions, or "no usable GPU: ..."
};

// Runs the probe of `device` ("gpu:0") with the worker program next to the
// coordinator (or options.worker_dir, or $DEVMAP_WORKER_DIR). Without a
// worker_gpu there, the text says why: the reason CMake recorded in that
// folder's worker_gpu.absent when it configured a build without CUDA
// (no_worker_gpu_reason), or that the folder has no worker_gpu and no record.
// A probe that gives no answer in `timeout_seconds` (a wedged driver or
// device: the watchdogs of a run do not exist yet) is killed, and the GPU is
// not usable (probe_timeout_reason).
constexpr double kGpuProbeSeconds = 60;
GpuProbe probe_gpu_device(const RunOptions& options, const std::string& device,
                          double timeout_seconds = kGpuProbeSeconds);

// "no usable GPU: ..." for a `program --probe` killed after `seconds`.
std::string probe_timeout_reason(const std::string& program, double seconds);

// "no usable GPU: ..." for a worker folder `dir` without worker_gpu, given
// the contents of its worker_gpu.absent (`recorded`; empty when it has none).
std::string no_worker_gpu_reason(const std::string& dir, const std::string& recorded);

// "no usable GPU: ..." for a `program --probe` that exited with `status`
// (not 0, not 3) and printed `output`: a worker_gpu the dynamic loader
// cannot start names the missing library (cuDNN's, cuBLAS's or another).
std::string probe_failure_reason(const std::string& program, int status, const std::string& output);

// Throws devmap::Error (kInvalidInput) naming the device, the ops and the
// reason when a GPU with ops is not usable and soft placement is off.
void resolve_gpu_placement(Config& config, const RunOptions& options, std::ostream& log);

}  // namespace devmap
