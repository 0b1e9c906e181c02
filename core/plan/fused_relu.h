// Which relu ops a device fuses into the op before them. A relu is fused
// where its one input is the output of a conv2d, batch_norm or add (ops
// whose backward never reads their own output: kReluFusingOps) that no
// other instruction of the device reads, on a device whose memory the CPU
// addresses (its kernels of those ops fuse: OpKernel::fuses_relu), with
// neither tensor crossing devices or living in the coordinator's segments,
// and neither recomputed (Node::recomputed). Then the producer writes
// max(y, 0) into its own output buffer (ForwardArgs::relu_output), the
// relu's output is that buffer (it has no buffer of its own: the memory
// plan and the executor both take this list), and the relu runs no forward
// instruction; its backward runs as before, on the same values. The bits
// are those of the unfused ops.
#pragma once

#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "core/plan/program.h"

namespace devmap {

// The ops a following relu is fused into.
inline constexpr std::string_view kReluFusingOps[] = {"conv2d", "batch_norm", "add"};

struct FusedRelu {
  int producer = -1;  // node (and output tensor) of the conv2d, batch_norm or add
  int relu = -1;      // node (and output tensor) of the relu
};

struct FusedReluInputs {
  const Graph* graph = nullptr;
  const std::vector<Instr>* forward = nullptr;  // the device's forward instructions
  const std::vector<int>* edge_of = nullptr;    // per tensor: the cut edge it crosses, or -1
  const std::vector<bool>* external = nullptr;  // per node: its output lives in the coordinator's segments
  bool host_memory = true;                      // the CPU addresses the device's memory
};

// In the order of the forward instructions.
std::vector<FusedRelu> fused_relus(const FusedReluInputs& in);

}  // namespace devmap
