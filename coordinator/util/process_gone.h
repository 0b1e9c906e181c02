// Whether a process id names no live process.
#pragma once

namespace devmap {

// True only when `pid` is positive and no process has it (kill(pid, 0)
// fails with ESRCH); a live process of another user counts as alive.
bool pid_gone(int pid);

}  // namespace devmap
