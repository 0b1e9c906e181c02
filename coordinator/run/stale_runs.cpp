#include "coordinator/run/stale_runs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "coordinator/util/process_gone.h"
#include "transport/run_cleanup.h"
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

std::string run_id_of(const std::string& name) {
  const int pid = run_owner_pid(name);
  if (pid <= 0) return "";
  const size_t start = std::string("devmap-").size();
  const size_t hex = name.find('-', start) + 1;
  size_t end = hex;
  while (end < name.size() && std::isxdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end - hex != 16 || (end < name.size() && name[end] != '-')) return "";
  return name.substr(start, end - start);
}

std::string run_lock_path(const std::string& run_id, const std::string& shm_dir) {
  return shm_dir + "/devmap-" + run_id + "-lock";
}

bool run_over(const std::string& run_id, const std::string& shm_dir) {
  const int pid = run_owner_pid("devmap-" + run_id);
  const int fd = ::open(run_lock_path(run_id, shm_dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // no lock file here: no proof (a run of another /dev/shm, or not a run)
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  // Unheld with a live pid: a run between creating its lock file and
  // locking it (or a pid reused here): left alone.
  return !held && pid_gone(pid);
}

std::vector<std::string> remove_stale_runs(const std::string& shm_dir, const std::string& tmp_dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  std::vector<std::string> locks;  // removed last: they say whether the rest is live
  for (const auto& entry : fs::directory_iterator(shm_dir, ec)) {
    std::string name = entry.path().filename().string();
    const std::string id = run_id_of(name);
    if (id.empty() || !run_over(id, shm_dir)) continue;
    if (!id.empty() && entry.path().string() == run_lock_path(id, shm_dir)) {
      locks.push_back(name);
      continue;
    }
    if (ShmSegment::remove(name)) removed.push_back(entry.path().string());
  }
  std::string tmp = tmp_dir;
  if (tmp.empty()) {
    const char* t = std::getenv("TMPDIR");
    tmp = (t && *t) ? t : "/tmp";
  }
  for (const auto& entry : fs::directory_iterator(tmp, ec)) {
    std::string name = entry.path().filename().string();
    const std::string id = run_id_of(name);
    // The folder's own marker says whether its run lives (its lock in this
    // /dev/shm may be gone already: another run's sweep removes it).
    if (id.empty() || name != "devmap-" + id || !is_run_dir(entry.path().string(), id) ||
        run_dir_in_use(entry.path().string()) || !pid_gone(run_owner_pid(name)))
      continue;
    if (remove_run_dir(entry.path().string(), id)) removed.push_back(entry.path().string());
  }
  for (const std::string& name : locks)
    if (ShmSegment::remove(name)) removed.push_back(shm_dir + "/" + name);
  return removed;
}

}  // namespace devmap
