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
// and on names that are already gone.
std::vector<std::string> remove_run_files(const std::string& segment_prefix, const std::string& run_dir,
                                          const std::string& shm_dir = "/dev/shm");

}  // namespace devmap
