// Signals that end a run. The handlers only record the signal; the run loop
// polls interrupted() and unwinds, so every destructor (shared-memory
// segments, socket files, child processes) runs.
#pragma once

namespace devmap {

void install_interrupt_handlers();  // SIGINT, SIGTERM; SIGPIPE ignored
int interrupt_signal();             // 0, or the signal that arrived
inline bool interrupted() {
  return interrupt_signal() != 0;
}

}  // namespace devmap
