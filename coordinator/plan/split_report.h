// What `coordinator plan` says of each op split across devices
// (core/graph/split_op.h): which part runs on which device, which of the
// op's outputs it computes, its parameters and the bytes it moves.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace devmap {

struct SplitPartReport {
  std::string op, part, device;  // "fc1", "fc1/part1", "cpu:1"
  std::string attr;              // "units", "filters"
  int64_t begin = 0, end = 0;    // its outputs [begin, end) of the op's
  uint64_t param_bytes = 0;
  // Per (micro-)batch: the op's input, received when it is made on another
  // device (the same tensor crosses once per device, whatever the parts on
  // it: counted for the first part there, the others show none); the part's
  // output, sent when the concat runs elsewhere. A training step moves each
  // again as a gradient, the other way: the input's also once per device,
  // the parts there reading it through one fan-out (core/graph/split_op.h).
  uint64_t input_bytes = 0, output_bytes = 0;
  std::string joined_on;  // the concat's device
};

// Every part of every split op of `graph`, in graph order, at `batch`
// samples.
std::vector<SplitPartReport> split_parts(const Graph& graph, int64_t batch);

// The `split ops` section of `plan` ("none" lines are left out: nothing is
// printed for a graph without parts); `training`: moves gradients too.
void print_split_parts(const std::vector<SplitPartReport>& parts, int64_t batch, bool training, std::ostream& os);
// The same as a JSON array.
std::string split_parts_json(const std::vector<SplitPartReport>& parts);

}  // namespace devmap
