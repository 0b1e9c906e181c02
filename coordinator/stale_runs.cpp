#include "coordinator/stale_runs.h"

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "transport/shm_segment.h"

namespace devmap {

namespace fs = std::filesystem;

int run_owner_pid(const std::string& name) {
  const std::string prefix = "devmap-";
  if (name.rfind(prefix, 0) != 0) return -1;
  size_t i = prefix.size(), j = i;
  while (j < name.size() && j - i < 10 && name[j] >= '0' && name[j] <= '9') ++j;
  if (j == i || j >= name.size() || name[j] != '-') return -1;
  return std::atoi(name.substr(i, j - i).c_str());
}

bool pid_gone(int pid) {
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

std::vector<std::string> remove_stale_runs(const std::string& shm_dir, const std::string& tmp_dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(shm_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (pid_gone(run_owner_pid(name)) && ShmSegment::remove(name)) removed.push_back(entry.path().string());
  }
  std::string tmp = tmp_dir;
  if (tmp.empty()) {
    const char* t = std::getenv("TMPDIR");
    tmp = (t && *t) ? t : "/tmp";
  }
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec) || !pid_gone(run_owner_pid(name))) continue;
    if (fs::remove_all(entry.path(), ec) > 0) removed.push_back(entry.path().string());
  }
  return removed;
}

}  // namespace devmap
