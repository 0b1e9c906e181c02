// Handoffs through a real slot ring between two processes: the caller
// produces tensors of `bytes` into a two-slot ShmChannel ring and a forked
// consumer reads every byte of each in place and releases its slot, as a
// consuming kernel would. For `coordinator calibrate` (the cost of a cut
// edge) and bench/transport_bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace devmap {

struct HandoffTiming {
  size_t bytes = 0;
  int count = 0;  // handoffs made
  double seconds_per_handoff = 0;
  uint64_t bytes_copied = 0;  // by the transport (0 between CPU processes)
};

// Where the probe's ring and sockets live: a run's segment prefix
// ("devmap-<run id>-") and socket folder, so that a run killed while it
// probes leaves nothing its guard and the next sweep do not remove.
struct HandoffPlace {
  std::string segment_prefix;
  std::string socket_dir;
};

// About `budget_seconds` of back-to-back handoffs (at least 20). Throws
// devmap::Error (kRuntime) when the consumer cannot be started or dies.
// The consumer dies with the caller (a kill -9 included). The caller must
// hold no ZeroMQ context across the call's fork.
HandoffTiming measure_handoffs(size_t bytes, double budget_seconds, const HandoffPlace& place);

}  // namespace devmap
