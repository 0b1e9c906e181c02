#include "transport/run_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "transport/run_names.h"
#include "transport/shm_segment.h"

namespace devmap {

std::vector<std::string> remove_run_files(const std::string& segment_prefix, const std::string& run_dir,
                                          const std::string& shm_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  if (!segment_prefix.empty())
    for (const auto& entry : fs::directory_iterator(shm_dir, ec)) {
      std::string name = entry.path().filename().string();
      if (name.rfind(segment_prefix, 0) == 0 && ShmSegment::remove(name)) removed.push_back(entry.path().string());
    }
  // The prefix is "devmap-<run id>-".
  const std::string run_id = segment_prefix.size() > 8 ? segment_prefix.substr(7, segment_prefix.size() - 8) : "";
  if (!run_dir.empty() && !run_id.empty() && remove_run_dir(run_dir, run_id)) removed.push_back(run_dir);
  return removed;
}

int mark_run_dir(const std::string& dir, const std::string& run_id) {
  // Locked under a temporary name, then renamed: the marker is never seen
  // unlocked while its run lives.
  const std::string marker = run_marker_path(dir), tmp = marker + ".tmp";
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX) != 0 || ::write(fd, run_id.data(), run_id.size()) != static_cast<ssize_t>(run_id.size()) ||
      ::rename(tmp.c_str(), marker.c_str()) != 0) {
    ::unlink(tmp.c_str());
    ::close(fd);
    return -1;
  }
  return fd;
}

bool run_dir_in_use(const std::string& dir) {
  const int fd = ::open(run_marker_path(dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

bool is_run_dir(const std::string& dir, const std::string& run_id) {
  const std::string base = dir.substr(dir.find_last_of('/') + 1);
  struct stat st {};
  if (base != "devmap-" + run_id || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  const std::string marker = run_marker_path(dir);
  if (::lstat(marker.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 64) return false;
  std::ifstream in(marker);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text == run_id;
}

bool remove_run_dir(const std::string& dir, const std::string& run_id) {
  if (!is_run_dir(dir, run_id)) return false;
  // The run makes sockets (*.sock) and its marker in the folder, nothing
  // else: those go; anything else keeps the folder and what it holds.
  const std::string marker_name = run_marker_path("").substr(1);
  bool others = false;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name, path = dir + "/" + name;
      struct stat st {};
      if (name == "." || name == ".." || name == marker_name || ::lstat(path.c_str(), &st) != 0) continue;
      if (S_ISSOCK(st.st_mode) && name.ends_with(".sock"))
        ::unlink(path.c_str());
      else
        others = true;
    }
    ::closedir(d);
  }
  if (others) return false;
  ::unlink(run_marker_path(dir).c_str());  // last: until it goes, the folder is recognisably the run's
  return ::rmdir(dir.c_str()) == 0;
}

}  // namespace devmap
