// `coordinator plan --dot FILE`: the placement as a Graphviz picture. One
// cluster per device (its name, threads, planned memory against its limit),
// ops as boxes inside (name and kind), the data ops outside, an arrow per
// tensor an op reads; a tensor that crosses devices is a bold arrow labelled
// with its bytes per training step (forward activation and, where the
// consumer's gradient rule gives that input a gradient, the gradient back;
// a metric's input gets none). FILE ending in .svg or .png is rendered by
// Graphviz's `dot`; any other name gets the DOT text.
#pragma once

#include <string>

#include "coordinator/config/config.h"
#include "coordinator/plan/job_memory.h"
#include "core/plan/partition.h"

namespace devmap {

struct PlacementPicture {
  const Config* config = nullptr;
  const Graph* graph = nullptr;          // placed
  const Partition* partition = nullptr;  // of the job's program
  const JobMemory* memory = nullptr;     // the job's plan
  int64_t batch = 0;                     // samples per step
};

std::string placement_dot(const PlacementPicture& picture);

// Writes `dot` to `path`, rendered when the name ends in .svg or .png.
// Throws devmap::Error (kInvalidInput) when it cannot write, or when
// rendering needs Graphviz and it is not installed (scripts/setup.sh).
void write_placement_picture(const std::string& path, const std::string& dot);

}  // namespace devmap
