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

// Which relus a device fuses into the backward pass of the op after them.
// A relu's gradient is fused where an op of kReluGradientFusingOps (whose
// backward reads its input, the relu's output) reads the relu's output, on
// a device whose memory the CPU addresses, that op's backward alone writing
// the relu output's gradient and the relu's backward alone reading it, with
// no tensor involved crossing devices and neither op recomputed. Then that
// backward writes the relu's input gradient itself, zero where its input
// (the relu's output) is not above zero (BackwardArgs::relu_input_gradient),
// into the relu input gradient's buffer; the relu output's gradient has no
// buffer of its own (the memory plan and the executor both take this list)
// and the relu runs no backward instruction. The bits are those of the
// unfused ops: relu's backward is the same select.
inline constexpr std::string_view kReluGradientFusingOps[] = {"max_pool2d"};

struct FusedReluGradient {
  int relu = -1;         // node of the relu
  int consumer = -1;     // node of the max_pool2d after it
  int output_grad = -1;  // tensor: the relu output's gradient, which has input_grad's buffer
  int input_grad = -1;   // tensor: the relu input's gradient (or its part of a sum), which the consumer writes
};

struct FusedReluGradientInputs {
  const Graph* graph = nullptr;
  const std::vector<Instr>* backward = nullptr;  // the device's backward instructions
  const std::vector<int>* edge_of = nullptr;     // per tensor: the cut edge it crosses, or -1
  bool host_memory = true;                       // the CPU addresses the device's memory
};

// In the order of the backward instructions.
std::vector<FusedReluGradient> fused_relu_gradients(const FusedReluGradientInputs& in);

}  // namespace devmap
