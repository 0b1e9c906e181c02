// Where the worker program of a device kind is.
#pragma once

#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "core/base/device_kind.h"

namespace devmap {

// The worker program a device kind runs: "worker_cpu" or "worker_gpu".
const char* worker_program_name(DeviceKind kind);

// The worker programs the config's declared devices run, each once,
// worker_cpu first (`--worker-programs`; scripts/launch.sh builds these).
std::vector<std::string> worker_programs(const Config& config);

// Where the worker programs are: options.worker_dir, else
// $DEVMAP_WORKER_DIR, else the first folder of companion_program_dirs()
// (coordinator/util/program_paths.h) that holds worker_cpu, else the
// coordinator's own folder.
std::string worker_program_dir(const RunOptions& options);

// The worker program for a device kind: in options.worker_dir, else in
// $DEVMAP_WORKER_DIR, else beside the coordinator or in its installed
// helper folder (coordinator/util/program_paths.h). Throws devmap::Error
// naming where it looked when it is not there.
std::string find_worker_program(const RunOptions& options, DeviceKind kind);

}  // namespace devmap
