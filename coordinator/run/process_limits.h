// What the coordinator checks of its own process before a run starts:
// enough file descriptors for ZeroMQ, its segments and files (the soft
// limit is raised towards the hard one when needed), and CPU cores for
// every devices.NAME.affinity that this process may run on.
#pragma once

#include "coordinator/config/config.h"

namespace devmap {

// File descriptors a run with `devices` workers needs at most, with room
// to spare: ZeroMQ's context and sockets, two connections per worker, one
// per shared-memory segment, the data, metrics and lock files.
int descriptors_needed(int devices);

// Throws devmap::Error (kInvalidInput) when the descriptor limit cannot be
// raised to descriptors_needed (say to raise `ulimit -n`), or when an
// affinity lists a core this process cannot run on (file:line:col of the
// device).
void check_process_limits(const Config& config);

}  // namespace devmap
