// Where the worker program of a device kind is.
#pragma once

#include <string>

#include "coordinator/config/run_options.h"
#include "core/base/device_kind.h"

namespace devmap {

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
