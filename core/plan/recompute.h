// Recomputation: an op whose Node::recomputed is set keeps its output only
// through the forward pass; the backward pass runs the op's forward again
// (a kForward instruction in the backward list, same kernel, same inputs,
// same step, samples and seed, so the same bits) right before the first
// instruction that reads the output, into a buffer that lives from there to
// its last reader (core/plan/tensor_allocations.h). An input that is itself
// recomputed is recomputed first; any other input stays alive until the
// recompute has read it.
//
// An op can be recomputed when it computes a per-sample tensor on the device
// of every op it reads (or reads only what the coordinator feeds) and every
// op that reads it: its output never crosses devices, so no send or receive
// repeats. Ops whose forward changes state (batch_norm's running statistics)
// are recomputed with that state put back afterwards (Executor).
#pragma once

#include <vector>

#include "core/graph/graph.h"
#include "core/plan/program.h"

namespace devmap {

// Whether op `node` may be recomputed in a program computing `needed`.
bool can_recompute(const Graph& graph, const std::vector<bool>& needed, int node);

// `backward` with a recompute of every Node::recomputed op that
// can_recompute() allows and some instruction reads in the backward pass,
// inserted before its first reader.
std::vector<Instr> with_recomputes(const Graph& graph, const std::vector<bool>& needed,
                                   const std::vector<Instr>& backward);

// Whether `ins`, an instruction of a backward list, is a recompute.
inline bool is_recompute(const Instr& ins) {
  return ins.kind == InstrKind::kForward;
}

}  // namespace devmap
