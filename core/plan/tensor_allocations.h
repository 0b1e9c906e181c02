// The buffers a device allocates for a program's tensors, and where each
// lies in the device's tensor arena. Buffers: every activation and
// activation gradient it computes, and on a device the CPU cannot address
// a staging copy of each tensor fed by the coordinator or crossing devices
// (on a host device those are used in place and need none); a relu fused
// into its conv2d writes into the conv2d's buffer and has none,
// and the output gradient of a relu whose backward the max_pool2d after it
// runs is that relu's input gradient's buffer.
//
// Each buffer lives from the first to the last instruction of the device's
// step that touches it (core/plan/arena.h places them): positions
// 0..F-1 are the device's forward instructions, F.. its backward ones, in
// the order the executor runs them. A forward touches its inputs and output;
// a backward its output's gradient, the input gradients it writes, and the
// forward inputs (OpSchema::backward_needs_inputs) and output
// (backward_needs_output) that the executor hands its kernel; a gradient sum
// its parts and their sum; a send or receive its tensor. The loss gradient,
// which the executor seeds before the backward pass, is touched at F. A
// fused relu's tensor is its conv2d's buffer. Staging buffers, which host
// memory fills before the step or reads after it, live for the whole step.
// Nothing else outlives the step: the executor copies losses and metrics
// out as their forward ends, and outputs the coordinator reads are host
// memory (staged on a GPU).
//
// A recomputed op's output (core/plan/recompute.h) has two buffers: one
// alive from its forward to its last forward reader, one from its recompute
// in the backward pass to its last backward reader, so nothing holds it
// across the gap between the passes.
//
// One list, which Executor::reserve() allocates (one arena per buffer set)
// and plan_memory() sums, so the plan equals the allocation by
// construction.
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
  int64_t floats = 0;       // at the batch asked for
  uint64_t bytes = 0;       // charged_bytes of the floats
  int first = 0, last = 0;  // its lifetime: positions in the device's step
  bool recomputed = false;  // the buffer of a recomputed output in the backward pass
  uint64_t offset = 0;      // in the arena of its buffer set
};

struct TensorArena {
  std::vector<TensorAllocation> allocations;  // in tensor order
  uint64_t bytes = 0;                         // one buffer set's arena
  uint64_t unshared = 0;                      // the buffers' bytes summed: the arena if none shared
  uint64_t lower_bound = 0;                   // the most bytes alive at one position
  // Activations kept across the gap between the passes: written in the
  // forward pass and read in the backward one (a recomputed output's
  // forward buffer is not; staging buffers are not counted).
  uint64_t kept = 0;
  int kept_buffers = 0;
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
  // The device's instructions, in the order the executor runs them.
  const std::vector<Instr>* forward = nullptr;
  const std::vector<Instr>* backward = nullptr;
  // Relu gradients fused into the max_pool2d after them (core/plan/fused_relu.h):
  // the relu output's gradient is its input gradient's buffer. Null: none.
  const std::vector<FusedReluGradient>* fused_relu_gradients = nullptr;
};

TensorArena tensor_arena(const TensorAllocationInputs& in, int64_t batch);

}  // namespace devmap
