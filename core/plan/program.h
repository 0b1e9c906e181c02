// Program: what a worker executes for one step, as a list of instructions
// over numbered tensors. build_training_program() is reverse-mode autodiff:
// it walks the graph backwards from the loss and emits each op's gradient
// rule (its kernel's backward) plus the sums where a tensor feeds several
// consumers. Tensor ids 0..graph.size()-1 are the ops' outputs; gradients
// follow.
#pragma once

#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace devmap {

struct TensorInfo {
  enum class Kind { kActivation, kGradient, kPartialGradient };
  std::string name;  // "conv1", "conv1@grad", "conv1@grad.relu1"
  Kind kind = Kind::kActivation;
  int node = -1;  // the op whose output (or its gradient) this is
};

enum class InstrKind {
  kForward,   // run node's forward: in = its inputs' tensors, out = {node}
  kBackward,  // run node's gradient rule: in = {grad of output}, out = grad per input (-1: none)
  kSumGrads,  // out[0] = in[0] + in[1] + ... in this order
  kSend,      // (partitioned programs) signal edge `node`'s consumers: the tensor in[0] is ready
  kRecv,      // (partitioned programs) wait for edge `node`'s tensor out[0] and read it in place
};

struct Instr {
  InstrKind kind;
  int node;  // the op; for kSend/kRecv the edge id
  std::vector<int> in, out;
};

struct Program {
  std::vector<TensorInfo> tensors;
  std::vector<Instr> forward, backward;
  int loss_node = -1;        // -1 for inference programs
  int loss_grad = -1;        // tensor seeded with 1 before backward
  std::vector<int> grad_of;  // per node: its output's gradient tensor, or -1
  std::vector<bool> needed;  // per node: computed by this program

  int tensor_count() const { return static_cast<int>(tensors.size()); }
};

// Forward over every op the loss and metrics depend on, backward over every
// op between a parameter and the loss, with the recomputes of the ops
// marked Node::recomputed (core/plan/recompute.h: kForward instructions in
// the backward list). Throws devmap::Error when the graph
// has no loss op.
Program build_training_program(const Graph& graph);

// Forward only, over the ops `outputs` depend on (and nothing else).
Program build_inference_program(const Graph& graph, const std::vector<int>& outputs);

}  // namespace devmap
