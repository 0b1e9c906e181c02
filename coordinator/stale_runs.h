// Cleans what crashed runs left behind: shared-memory segments
// (/dev/shm/devmap-<pid>-<id>-*) and run directories ($TMPDIR/devmap-<pid>-<id>)
// whose owner pid no longer exists. A run whose owner still lives is never
// touched, so concurrent runs are safe.
#pragma once

#include <string>
#include <vector>

namespace devmap {

// The owner pid encoded in a run name ("devmap-1234-abcd..." -> 1234), or -1
// when the name is not a run's.
int run_owner_pid(const std::string& name);

// Whether no process `pid` exists (a positive pid only).
bool pid_gone(int pid);

// Removes the leftovers of dead owners; returns what was removed.
std::vector<std::string> remove_stale_runs(const std::string& shm_dir = "/dev/shm", const std::string& tmp_dir = "");

}  // namespace devmap
