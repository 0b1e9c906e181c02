#include "coordinator/run_resources.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "core/error.h"
#include "transport/run_names.h"

namespace devmap {
namespace {

std::string make_run_id() {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d-%016llx", static_cast<int>(::getpid()), static_cast<unsigned long long>(r));
  return buf;
}

std::string temp_root() {
  const char* t = std::getenv("TMPDIR");
  return (t && *t) ? t : "/tmp";
}

}  // namespace

RunResources::RunResources() : run_id_(make_run_id()), dir_(temp_root() + "/devmap-" + run_id_) {
  if (::mkdir(dir_.c_str(), 0700) != 0)
    throw_runtime("cannot create run directory " + dir_ + ": " + std::strerror(errno));
}

RunResources::~RunResources() {
  // Remove whatever sockets the run left in its private directory, then it.
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") ::unlink((dir_ + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir_.c_str());
}

std::string RunResources::socket_path(const std::string& name) const {
  return dir_ + "/" + name + ".sock";
}

std::string RunResources::segment_name(const std::string& purpose) const {
  return devmap::segment_name(segment_prefix(), purpose);
}

}  // namespace devmap
