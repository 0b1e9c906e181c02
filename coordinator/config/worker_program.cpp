#include "coordinator/config/worker_program.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "coordinator/util/program_paths.h"
#include "core/base/error.h"

namespace devmap {
namespace {

// The folder the user named: options.worker_dir, else $DEVMAP_WORKER_DIR;
// empty when neither is set.
std::string named_worker_dir(const RunOptions& options) {
  if (!options.worker_dir.empty()) return options.worker_dir;
  if (const char* env = std::getenv("DEVMAP_WORKER_DIR"); env && *env) return env;
  return "";
}

}  // namespace

const char* worker_program_name(DeviceKind kind) {
  return kind == DeviceKind::kCpu ? "worker_cpu" : "worker_gpu";
}

std::vector<std::string> worker_programs(const Config& config) {
  std::vector<std::string> names;
  for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu})
    for (const DeviceSpec& d : config.devices)
      if (d.kind == kind) {
        names.push_back(worker_program_name(kind));
        break;
      }
  return names;
}

std::string worker_program_dir(const RunOptions& options) {
  if (std::string named = named_worker_dir(options); !named.empty()) return named;
  if (const std::string cpu = find_companion_program("worker_cpu"); !cpu.empty())
    return std::filesystem::path(cpu).parent_path().string();
  const std::vector<std::filesystem::path> dirs = companion_program_dirs();
  return dirs.empty() ? std::string(".") : dirs.front().string();
}

std::string find_worker_program(const RunOptions& options, DeviceKind kind) {
  const std::string name = worker_program_name(kind);
  if (const std::filesystem::path dir = named_worker_dir(options); !dir.empty()) {
    const std::filesystem::path p = dir / name;
    if (::access(p.c_str(), X_OK) != 0)
      throw_runtime("cannot find the worker program " + p.string() + " (build it, or set DEVMAP_WORKER_DIR)");
    return p.string();
  }
  if (std::string p = find_companion_program(name); !p.empty()) return p;
  std::string looked;
  for (const std::filesystem::path& d : companion_program_dirs())
    looked += (looked.empty() ? "" : " or ") + (d / name).string();
  throw_runtime("cannot find the worker program " + (looked.empty() ? name : looked) +
                " (build it, or set DEVMAP_WORKER_DIR)");
}

}  // namespace devmap
