// WorkerPlan: everything one worker process needs to run its part of a job,
// sent by the coordinator after the handshake. It carries the graph as
// op descriptions (the worker re-infers shapes), never tensor data: inputs
// arrive through the shared-memory slots described by InputLayout.
#pragma once

#include <string>
#include <vector>

#include "core/exec/kernel.h"
#include "core/graph/graph.h"
#include "core/plan/pipeline_schedule.h"

namespace devmap {

// Where the coordinator puts each step's inputs: `slots` equal slots, each
// holding `max_batch` samples of every input op, in `input_nodes` order,
// float32, at offset slot * slot_bytes + input_offsets[k].
struct InputLayout {
  std::vector<int> input_nodes;
  std::vector<uint64_t> input_offsets;
  uint64_t slot_bytes = 0;
  uint32_t slots = 2;

  uint64_t total_bytes() const { return slot_bytes * slots; }
  // Every input op of the graph.
  static InputLayout for_graph(const Graph& graph, int64_t max_batch, uint32_t slots);
  // The outputs of `nodes` (prediction results), same slot structure.
  static InputLayout for_nodes(const Graph& graph, const std::vector<int>& nodes, int64_t max_batch, uint32_t slots);
};

struct WorkerPlan {
  std::string device;  // "cpu:0"; every op's Node::device says where it runs
  int threads = 1;
  std::vector<int> affinity;  // CPU cores the worker's threads are pinned to (empty: not pinned)
  uint64_t seed = 0;
  int64_t gradient_chunk = 0;  // train.gradient_chunk (Executor::set_gradient_chunk)
  bool training = true;
  bool profile = false;  // time every op (--profile)
  OptimizerConfig optimizer;
  int64_t max_batch = 1;  // the largest (micro-)batch a step carries
  // How the micro-batches of a round flow through the devices: every
  // worker derives the same plan_pipeline(graph, partition, training,
  // pipeline, micro_batches, 2) as the coordinator.
  PipelineKind pipeline = PipelineKind::kNone;
  int micro_batches = 1;      // at most, per round (a STEP's micro_batches)
  uint64_t memory_limit = 0;  // the device's memory_limit in bytes (0: unlimited)
  bool offload = false;       // devices.NAME.offload: parameters (the Executor's `offload`)
  Graph graph;                // ops with attrs and inputs; shapes re-inferred on decode
  std::vector<int> outputs;   // inference: the ops whose outputs are wanted
  std::string input_segment;
  InputLayout layout;
  // Inference: where the worker that computes an output op writes it.
  std::string output_segment;
  InputLayout output_layout;
  // Names shared with the other workers of the run: segments of cut edges
  // start with run_prefix, data sockets live in run_dir.
  std::string run_prefix;
  std::string run_dir;
};

std::string encode_worker_plan(const WorkerPlan& plan);
// Throws devmap::Error on malformed bytes or an op this build does not know.
WorkerPlan decode_worker_plan(std::string_view bytes);

}  // namespace devmap
