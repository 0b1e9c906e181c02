// Signals that end a run. The handlers only record what arrived; the run
// loop polls and unwinds, so every destructor (shared-memory segments,
// socket files, child processes) runs.
//
// The first SIGINT or SIGTERM asks for a graceful stop: the job finishes
// the step in progress, writes a checkpoint and exits with 128 + signal.
// A second one, or a graceful stop that outlasts the grace period, asks
// for an abort: the job stops waiting at once and unwinds.
#pragma once

#include <chrono>

namespace devmap {

void install_interrupt_handlers();  // SIGINT, SIGTERM; SIGPIPE ignored
int interrupt_signal();             // 0, or the first stop signal that arrived
inline bool interrupted() {
  return interrupt_signal() != 0;
}
// Whether to stop waiting now: a second signal came, or the grace period
// since the first one is over.
bool abort_requested();
// How long a graceful stop may take (default 30 s).
void set_grace_period(std::chrono::milliseconds grace);
std::chrono::milliseconds grace_period();

// "SIGINT", "SIGTERM", else "signal N".
const char* signal_name(int sig);

}  // namespace devmap
