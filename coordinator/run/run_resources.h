// RunResources: the names a run owns outside its own memory: a run id, its
// lock file (/dev/shm/devmap-<run id>-lock, locked with flock for the
// run's life: what tells other runs' sweeps this run is alive, see
// stale_runs.h), a private directory for ZeroMQ ipc socket files (mode
// 0700, created exclusively) and the shared-memory segments created under
// that id. The
// destructor removes all of them, so every exit path that unwinds cleans
// up; signal handlers only set a flag and let the run loop unwind. For the
// exits that do not unwind (SIGKILL, a crash), the constructor starts
// devmap_run_guard from the coordinator's folder or its installed helper
// folder (run_guard_main.cpp, coordinator/util/program_paths.h), which
// removes the run's names once this process is gone.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace devmap {

// Whether a run removes what crashed runs left before it creates its own
// (stale_runs.h); each removal is reported on stderr.
enum class StaleRuns { kLeave, kRemoveFirst };

class RunResources {
 public:
  // Makes a new run id and its socket directory.
  explicit RunResources(StaleRuns stale = StaleRuns::kLeave);
  ~RunResources();
  RunResources(const RunResources&) = delete;
  RunResources& operator=(const RunResources&) = delete;

  // "<pid>-<16 hex digits>": unique per run, starts with the owner's pid.
  const std::string& run_id() const { return run_id_; }
  // A path for an ipc socket file inside the private directory.
  std::string socket_path(const std::string& name) const;
  // "devmap-<run id>-": every shared-memory segment of the run starts with it.
  std::string segment_prefix() const { return kSegmentPrefix + run_id_ + "-"; }
  // The shared-memory segment name for `purpose` ("devmap-<run id>-<purpose>").
  std::string segment_name(const std::string& purpose) const;
  const std::string& directory() const { return dir_; }

  // Prefix that every devmap shared-memory segment name starts with.
  static constexpr const char* kSegmentPrefix = "devmap-";

 private:
  void start_guard();

  std::string run_id_;
  int lock_fd_ = -1;
  int marker_fd_ = -1;  // locked for the run's life (transport/run_cleanup.h)
  std::string dir_;
  int guard_fd_ = -1;  // the write end of the guard's stdin: it reads end-of-file when this process ends
  pid_t guard_pid_ = -1;
};

}  // namespace devmap
