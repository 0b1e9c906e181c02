// Removes what one run owns outside its processes: every shared-memory
// segment whose name starts with the run's prefix and the run's socket
// directory. The coordinator's RunResources does this on every exit it
// survives; a worker does it when the coordinator is gone (killed), so a
// run killed with SIGKILL leaves nothing behind once its workers exit.
#pragma once

#include <string>
#include <vector>

namespace devmap {

// Returns what was removed. Safe to call from several processes at once
// and on names that are already gone. The directory goes only as
// remove_run_dir() allows.
std::vector<std::string> remove_run_files(const std::string& segment_prefix, const std::string& run_dir,
                                          const std::string& shm_dir = "/dev/shm");

// Writes run `run_id`'s marker (run_marker_path) into `dir`, the folder the
// run has just made, holding an advisory lock (flock) on it from before it
// appears under its name: the run keeps the returned descriptor open for
// its life, so the folder's own marker says whether its run is live, in
// any PID namespace that shares the folder. -1 when it cannot be written.
int mark_run_dir(const std::string& dir, const std::string& run_id);

// Whether a live process holds the lock of `dir`'s marker.
bool run_dir_in_use(const std::string& dir);

// Whether `dir` is run `run_id`'s own folder: a directory (not a link)
// named devmap-<run id> that holds the run's marker with the run id.
bool is_run_dir(const std::string& dir, const std::string& run_id);

// Removes what run `run_id` makes in its folder `dir` (its sockets and its
// marker), then the folder when nothing else is left in it; never anything
// else, never recursively, and nothing at all unless is_run_dir(). Returns
// whether the folder is gone.
bool remove_run_dir(const std::string& dir, const std::string& run_id);

}  // namespace devmap
