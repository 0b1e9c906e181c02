// The memory plan: what every device's worker will allocate for a job, to
// the byte, before anything runs. It mirrors the Executor's allocations
// (parameters, their gradients and optimizer state, one arena per buffer
// set in which every tensor the device computes, and on devices the CPU
// cannot address every staging buffer, has its place by lifetime
// (core/plan/tensor_allocations.h), one shared workspace, and on those
// devices the math libraries' fixed workspace)
// plus the shared-memory slots a CPU worker writes for its cut edges; every figure is rounded as DeviceMemory charges
// it. split_batch() picks the largest micro-batch that fits every device's memory_limit. Pure functions: the
// coordinator plans with them and tests compare them with what the allocators measured.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/plan/partition.h"
#include "core/plan/program.h"

namespace devmap {

// What the plan needs to know of one device.
struct PlanDevice {
  std::string name;         // "cpu:0"
  uint64_t limit = 0;       // memory_limit in bytes; 0: unlimited
  bool host_memory = true;  // the CPU addresses its memory (tensors that cross devices are used in place);
                            // false: a GPU, which also holds library_workspace_bytes(false) for cuBLAS
  // Workspace its kernel for `node` needs at `batch` samples (null: the
  // op schema's figure, Node::workspace_bytes).
  std::function<uint64_t(const Node& node, int64_t batch)> workspace_bytes;
  int sets = 1;  // buffer sets: micro-batches a pipeline keeps in flight here
  // `offload: parameters`: trained parameters, their gradients and optimizer
  // state live in host memory outside the limit; the device holds the
  // staging pool they stream through (core/plan/offload_layout.h).
  bool offload = false;
};

// One op's share of its device's memory, its tensor buffers counted whole
// (the arena shares them by lifetime).
struct OpMemory {
  int node = -1;
  std::string op;
  uint64_t params = 0, grads = 0, optimizer_state = 0;
  uint64_t activations = 0;       // its output, kept for the backward pass when training
  uint64_t activation_grads = 0;  // gradients of its output (and partial sums of them)
  uint64_t staging = 0;           // device copies of host tensors it reads or writes (GPU)
  uint64_t workspace = 0;         // its kernel's scratch (the device holds the largest one)
  uint64_t offloaded = 0;         // host memory (offload): its parameters, gradients and optimizer state
  uint64_t total() const { return params + grads + optimizer_state + activations + activation_grads + staging; }
};

struct DeviceMemoryPlan {
  std::string device;
  uint64_t limit = 0;
  uint64_t params = 0, grads = 0, optimizer_state = 0;
  // The tensor buffers, each counted whole (as if none shared memory): the
  // ops' figures summed.
  uint64_t activations = 0, activation_grads = 0, staging = 0;
  // The arena those buffers share by lifetime, over all buffer sets: what
  // the device allocates for them. arena_lower_bound: the most bytes alive
  // at once (per set, times the sets), which no placement can go below.
  uint64_t arena = 0, arena_lower_bound = 0;
  // Of those buffers, the activations kept from the forward pass for the
  // backward one (TensorArena::kept), over all buffer sets, and how many.
  uint64_t kept_activations = 0;
  int kept_buffers = 0;
  uint64_t workspace = 0;  // the largest op workspace: one buffer shared by all kernels
  uint64_t transport = 0;  // slot rings of the cut edges it writes (CPU workers)
  uint64_t library = 0;    // its math libraries' fixed workspace (cuBLAS on a GPU: library_workspace_bytes)
  // offload: the staging pool on the device (in total()) and the host
  // memory of the offloaded state (not in total(): outside the limit).
  uint64_t offload_staging = 0, offloaded = 0;
  std::vector<OpMemory> ops;

  uint64_t unshared_tensors() const { return activations + activation_grads + staging; }
  uint64_t total() const {
    return params + grads + optimizer_state + arena + workspace + transport + library + offload_staging;
  }
  bool fits() const { return limit == 0 || total() <= limit; }
  // The op with the largest share (ties: the first), or nullptr.
  const OpMemory* largest_op() const;
};

struct EdgeMemory {
  int id = 0;
  std::string tensor;
  bool backward = false;
  std::string producer;
  std::vector<std::string> consumers;
  Shape shape;              // at the plan's batch
  uint64_t bytes = 0;       // per micro-batch
  uint64_t ring_bytes = 0;  // its slot ring (PlanInputs::ring_slots slots, else edge_slots)
};

struct MemoryPlan {
  int64_t batch = 0;  // the (micro-)batch the plan is for
  bool training = false;
  std::vector<DeviceMemoryPlan> devices;  // the partition's devices, sorted
  std::vector<EdgeMemory> edges;
  const DeviceMemoryPlan* find(const std::string& device) const;
  bool fits() const;
};

struct PlanInputs {
  const Graph* graph = nullptr;
  const Program* program = nullptr;
  const Partition* partition = nullptr;
  std::vector<PlanDevice> devices;  // at least the partition's
  int optimizer_states = 0;         // state tensors per parameter (training)
  std::vector<int> external;        // ops whose outputs live in the coordinator's segments (inputs, read-back outputs)
  uint32_t edge_slots = 2;          // slots per cut edge ring
  std::vector<int> ring_slots;      // per edge id, when a pipeline sizes them (else edge_slots)
};

MemoryPlan plan_memory(const PlanInputs& in, int64_t batch);

// The sizes of the micro-batches a batch of `batch` samples runs as when no
// micro-batch may exceed `micro`: ceil(batch / micro) of them, as even as
// possible, the larger ones first (64 at most 7: four of 7, then six of 6).
std::vector<int64_t> micro_batch_sizes(int64_t batch, int64_t micro);
// `total` samples in `count` parts as even as possible, the larger first.
std::vector<int64_t> split_evenly(int64_t total, int64_t count);
// "4 of 7 and 6 of 6", "4 of 16": the sizes of micro_batch_sizes(batch, micro).
std::string describe_micro_batches(int64_t batch, int64_t micro);
// "10 micro-batches: 4 of 7 and 6 of 6", "4 micro-batches of 16".
std::string split_phrase(int64_t batch, int64_t micro);

// How a requested batch is run: `count` micro-batches of at most `micro`
// samples, as even as micro_batch_sizes() makes them.
struct BatchSplit {
  int64_t requested = 0, micro = 0, count = 1;
  MemoryPlan plan;  // at `micro`
  // "cpu:0: batch 64 needs 210 MiB > 128 MiB limit; running 4 micro-batches of 16"; empty when not split
  std::string decision;
};

// The largest batch up to `upto` whose plan fits every device. Throws
// devmap::Error (kInvalidInput) when one sample does not fit a device,
// naming the device, its largest op, the bytes against the limit and what
// to change.
int64_t largest_fitting_batch(const PlanInputs& in, int64_t upto);

// The largest micro-batch up to `requested` that fits every device, evened
// out over the micro-batches it takes (64 that fits 20 runs as 4 of 16; 64
// that fits 7 as 10: four of 7 and six of 6).
// Throws devmap::Error (kInvalidInput) when one sample does not fit a
// device, naming the device, its largest op, the bytes against the limit
// and what to change.
BatchSplit split_batch(const PlanInputs& in, int64_t requested);

}  // namespace devmap
