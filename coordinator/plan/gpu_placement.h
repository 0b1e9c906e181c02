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
// coordinator (or options.worker_dir).
GpuProbe probe_gpu_device(const RunOptions& options, const std::string& device);

// Throws devmap::Error (kInvalidInput) naming the device, the ops and the
// reason when a GPU with ops is not usable and soft placement is off.
void resolve_gpu_placement(Config& config, const RunOptions& options, std::ostream& log);

}  // namespace devmap
