// The buffers a device allocates for a program's tensors: every activation
// and activation gradient it computes, and on a device the CPU cannot
// address a staging copy of each tensor fed by the coordinator or crossing
// devices (on a host device those are used in place and need none); a relu
// fused into its conv2d writes into the conv2d's buffer and has none. One
// list, which Executor::reserve() allocates (once per buffer set) and
// plan_memory() sums, so the plan equals the allocation by construction.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph/graph.h"
#include "core/plan/fused_relu.h"
#include "core/plan/program.h"

namespace devmap {

struct TensorAllocation {
  enum class Kind { kActivation, kActivationGrad, kStaging };
  int tensor = -1;  // program tensor id
  int node = -1;    // the op whose output (or output's gradient) it holds
  Kind kind = Kind::kActivation;
  int64_t floats = 0;  // at the batch asked for
};

struct TensorAllocationInputs {
  const Graph* graph = nullptr;
  const Program* program = nullptr;
  const std::vector<bool>* uses_tensor = nullptr;  // per tensor: this device reads or writes it
  const std::vector<int>* edge_of = nullptr;       // per tensor: the cut edge it crosses, or -1
  const std::vector<bool>* external = nullptr;     // per node: its output lives in the coordinator's segments
  bool host_memory = true;                         // the CPU addresses the device's memory
  // Relus fused into their conv2d (core/plan/fused_relu.h): their output is the
  // conv2d's buffer. Null: none.
  const std::vector<FusedRelu>* fused_relus = nullptr;
};

// In tensor order.
std::vector<TensorAllocation> tensor_allocations(const TensorAllocationInputs& in, int64_t batch);

}  // namespace devmap
