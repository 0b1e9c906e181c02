// Graph: named ops in topological order (every input precedes its consumer),
// with per-sample shapes inferred and parameters listed. Placement (the
// device of each op) is filled in by the coordinator's placer.
#pragma once

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/graph/op_schema.h"

namespace devmap {

struct Node {
  std::string name;
  const OpSchema* schema = nullptr;
  std::vector<int> inputs;  // node indices
  Attrs attrs;
  SourceLoc loc;       // where the config defined this op (for messages)
  std::string device;  // "cpu:0"; empty until placed
  // The config's `recompute` key: whether the plan may (kAuto), must
  // (kAlways) or must not (kNever) recompute this op's output.
  enum class Recompute { kAuto, kAlways, kNever };
  Recompute recompute = Recompute::kAuto;
  // The plan's choice: the output is dropped after the forward pass and
  // computed again in the backward pass (core/plan/recompute.h).
  bool recomputed = false;
  // A part of an op split across devices (core/graph/split_op.h): the split
  // op's name, the first of its outputs this part computes and how many the
  // whole op has. Its parameters are those rows of the whole op's
  // parameters: drawn, saved and loaded as them. `part_of` empty: not a part.
  std::string part_of;
  int64_t part_begin = 0, part_whole = 0;

  // Filled by Graph::infer().
  std::vector<Shape> input_shapes;
  Shape out_shape;  // per sample; batch-level for loss/metric ops
  std::vector<ParamSpec> params;

  const std::string& op() const { return schema->name; }
  // Output shape for a batch of `batch` samples.
  Shape out_shape_for(int64_t batch) const { return schema->batch_reduced() ? out_shape : out_shape.with_batch(batch); }
  // Sizes the planner needs, float32.
  int64_t param_bytes() const;
  int64_t trained_param_bytes() const;  // of the parameters with ParamSpec::trained
  int64_t activation_bytes(int64_t batch) const { return out_shape_for(batch).numel() * 4; }
  double forward_flops(int64_t batch) const;      // 0 for ops without a count
  uint64_t workspace_bytes(int64_t batch) const;  // OpSchema::workspace_bytes, 0 when none
  // 0 when not differentiable; without the input gradients' share
  // (OpSchema::input_gradient_flops_factor) when none is computed.
  double backward_flops(int64_t batch, bool input_gradients = true) const;
};

class Graph {
 public:
  // Appends a node. Its inputs must already be in the graph.
  int add(Node node);
  int size() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int i) const { return nodes_[static_cast<size_t>(i)]; }
  Node& node(int i) { return nodes_[static_cast<size_t>(i)]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  int find(const std::string& name) const;  // -1 when absent
  std::vector<int> consumers(int i) const;  // in node order

  // Infers shapes and parameters of every node in order. Throws
  // devmap::Error with the op's source location on a mismatch.
  void infer();

  // Index of the single node with this role, or -1; throws when several.
  int find_role(OpRole role) const;
  std::vector<int> find_all_role(OpRole role) const;

  // Totals for a batch.
  int64_t param_count() const;  // trained parameters (not op state such as running statistics)
  double forward_flops(int64_t batch) const;
  double training_flops(int64_t batch) const;  // forward + backward of every op

 private:
  std::vector<Node> nodes_;
};

}  // namespace devmap
