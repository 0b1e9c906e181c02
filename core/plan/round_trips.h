// Round trips: ops placed apart from every op they exchange tensors with, so
// those tensors leave a device and come back (fc1 on cpu:1 -> relu3 on cpu:0
// -> logits on cpu:1). A pure function of the placed graph and its program:
// `coordinator plan` and the run's start name them, with the map that
// avoids them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/plan/program.h"

namespace devmap {

// An op the program computes that reads computed ops, all on one other
// device, and whose readers (if any) run there too: what it reads leaves that
// device and what it makes (or, training, its gradient) comes back. An op
// that reads only what the coordinator feeds (conv1 on the GPU, the rest on
// a CPU) is where a split starts, not a round trip; nor is a part of an op
// split across devices, or the concat that joins the parts.
struct StrandedOp {
  int node = -1;
  std::string device;             // where it runs
  std::string neighbours_device;  // where all its neighbours run
  std::vector<int> inputs;        // its computed inputs, in node order
  std::vector<int> consumers;     // the computed ops that read it, in node order
};

struct RoundTrips {
  std::vector<StrandedOp> ops;  // in node order; empty: none
  // The ops to move to their neighbours' device: the stranded ops the user
  // left to the default placement, or, when the user placed them all, every
  // one. In node order.
  std::vector<size_t> moves;  // indices into `ops`
  // The cut edges now, and with `moves` made (forward activations and
  // gradients): their count and bytes per sample.
  int edges = 0, edges_after = 0;
  int64_t bytes_per_sample = 0, bytes_per_sample_after = 0;
};

// The stranded ops of `graph` (each op's device set) under `program`.
// `placed_by_user` (per node; shorter: false) marks the ops whose device the
// user chose, which the advice moves last.
RoundTrips find_round_trips(const Graph& graph, const Program& program, const std::vector<bool>& placed_by_user);

}  // namespace devmap
