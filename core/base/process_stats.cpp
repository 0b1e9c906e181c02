#include "core/base/process_stats.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace devmap {

uint64_t read_vm_hwm_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

std::optional<std::string> host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return std::nullopt;
  return std::string(name);
}

}  // namespace devmap
