#include "coordinator/util/program_paths.h"

#include <unistd.h>

#include <system_error>

#ifndef DEVMAP_HELPER_DIR_FROM_BIN
#define DEVMAP_HELPER_DIR_FROM_BIN "../libexec/devmap"
#endif

namespace devmap {

std::vector<std::filesystem::path> companion_program_dirs() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || self.empty()) return {};
  const std::filesystem::path dir = self.parent_path();
  return {dir, (dir / DEVMAP_HELPER_DIR_FROM_BIN).lexically_normal()};
}

std::string find_companion_program(const std::string& name) {
  for (const std::filesystem::path& dir : companion_program_dirs()) {
    const std::filesystem::path p = dir / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

}  // namespace devmap
