// Cleans what crashed runs left behind: shared-memory segments
// (/dev/shm/devmap-<pid>-<id>-*) and run folders ($TMPDIR/devmap-<pid>-<id>)
// of runs that are over, and nothing without proof that it is a run's. A
// run holds an advisory lock (flock) on its lock file
// /dev/shm/devmap-<pid>-<id>-lock for its whole life (RunResources), so
// liveness does not depend on pids: a run in another PID namespace that
// shares /dev/shm (a container) is alive while it holds its lock. A run is
// over when its lock file exists, is held by no one, and its pid is not a
// live process here; without the lock file no segment of the run is
// touched. A folder goes only when it carries the run's marker, no process
// holds the marker's lock (a run of another namespace with its own
// /dev/shm holds its own) and its pid is gone here; then only what the run
// makes in it (transport/run_cleanup.h). A user's folder that only looks
// like a run's name is never touched.
// A live run is never touched, so concurrent runs are safe.
#pragma once

#include <string>
#include <vector>

namespace devmap {

// The owner pid encoded in a run name ("devmap-1234-abcd..." -> 1234), or -1
// when the name is not a run's.
int run_owner_pid(const std::string& name);

// "devmap-1234-0123456789abcdef-input" -> "1234-0123456789abcdef"; "" when
// the name is not a run's.
std::string run_id_of(const std::string& name);

// The lock file a run holds: "<shm_dir>/devmap-<run id>-lock".
std::string run_lock_path(const std::string& run_id, const std::string& shm_dir = "/dev/shm");

// Whether run `run_id` is over (see above).
bool run_over(const std::string& run_id, const std::string& shm_dir = "/dev/shm");

// Removes the leftovers of runs that are over; returns what was removed.
std::vector<std::string> remove_stale_runs(const std::string& shm_dir = "/dev/shm", const std::string& tmp_dir = "");

}  // namespace devmap
