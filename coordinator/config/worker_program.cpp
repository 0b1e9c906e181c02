#include "coordinator/config/worker_program.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/base/error.h"

namespace devmap {

std::string worker_program_dir(const RunOptions& options) {
  if (!options.worker_dir.empty()) return options.worker_dir;
  if (const char* env = std::getenv("DEVMAP_WORKER_DIR")) return env;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

std::string find_worker_program(const RunOptions& options, DeviceKind kind) {
  std::string name = kind == DeviceKind::kCpu ? "worker_cpu" : "worker_gpu";
  std::filesystem::path p = std::filesystem::path(worker_program_dir(options)) / name;
  if (::access(p.c_str(), X_OK) != 0)
    throw_runtime("cannot find the worker program " + p.string() + " (build it, or set DEVMAP_WORKER_DIR)");
  return p.string();
}

}  // namespace devmap
