#include "core/plan/tensor_allocations.h"

#include <algorithm>
#include <cassert>

#include "core/plan/arena.h"
#include "core/plan/device_budget.h"
#include "core/plan/recompute.h"

namespace devmap {
namespace {

// Per tensor: the first and last positions that touch it, or -1; for a
// recomputed output, its forward lifetime and (again_*) its backward one.
struct Lifetimes {
  std::vector<int> first, last, again_first, again_last;
  const std::vector<int>* root;         // per tensor: the tensor whose buffer it is
  const std::vector<bool>* recomputed;  // per tensor: recomputed in the backward pass
  bool backward = false;                // positions now touched are the backward pass's
  void touch(int tensor, int position) {
    if (tensor < 0) return;
    const auto t = static_cast<size_t>((*root)[static_cast<size_t>(tensor)]);
    const bool again = backward && (*recomputed)[t];
    int& f = again ? again_first[t] : first[t];
    int& l = again ? again_last[t] : last[t];
    if (f < 0 || position < f) f = position;
    l = std::max(l, position);
  }
};

void touch_instruction(const Graph& g, const Instr& ins, int position, Lifetimes& life) {
  for (int t : ins.in) life.touch(t, position);
  for (int t : ins.out) life.touch(t, position);
  if (ins.kind != InstrKind::kBackward) return;
  const Node& node = g.node(ins.node);
  if (node.schema->backward_needs_inputs)
    for (int t : node.inputs) life.touch(t, position);
  if (node.schema->backward_needs_output) life.touch(ins.node, position);
}

}  // namespace

TensorArena tensor_arena(const TensorAllocationInputs& in, int64_t batch) {
  assert(in.graph && in.program && in.uses_tensor && in.edge_of && in.external && in.forward && in.backward);
  const Program& p = *in.program;
  const auto nt = static_cast<size_t>(p.tensor_count());
  std::vector<int> root(nt);
  for (size_t t = 0; t < nt; ++t) root[t] = static_cast<int>(t);
  std::vector<bool> fused(nt, false);
  if (in.fused_relus != nullptr)
    for (const FusedRelu& f : *in.fused_relus) {
      fused[static_cast<size_t>(f.relu)] = true;
      root[static_cast<size_t>(f.relu)] = f.producer;
    }
  if (in.fused_relu_gradients != nullptr)
    for (const FusedReluGradient& f : *in.fused_relu_gradients) {
      fused[static_cast<size_t>(f.output_grad)] = true;
      root[static_cast<size_t>(f.output_grad)] = f.input_grad;
    }

  std::vector<bool> recomputed(nt, false);
  for (const Instr& ins : *in.backward)
    if (is_recompute(ins)) recomputed[static_cast<size_t>(ins.out[0])] = true;
  const std::vector<int> none(nt, -1);
  Lifetimes life{none, none, none, none, &root, &recomputed};
  const int forward_count = static_cast<int>(in.forward->size());
  int position = 0;
  for (const Instr& ins : *in.forward) touch_instruction(*in.graph, ins, position++, life);
  life.backward = true;
  if (!in.backward->empty()) life.touch(p.loss_grad, forward_count);  // seeded as the backward pass begins
  for (const Instr& ins : *in.backward) touch_instruction(*in.graph, ins, position++, life);
  const int step_end = std::max(position - 1, 0);

  TensorArena arena;
  std::vector<ArenaBuffer> buffers;
  for (size_t i = 0; i < nt; ++i) {
    if (!(*in.uses_tensor)[i] || fused[i]) continue;
    const TensorInfo& info = p.tensors[i];
    const bool staged =
        (info.kind == TensorInfo::Kind::kActivation && (*in.external)[static_cast<size_t>(info.node)]) ||
        (*in.edge_of)[i] >= 0;
    if (staged && in.host_memory) continue;  // used in place
    TensorAllocation a;
    a.tensor = static_cast<int>(i);
    a.node = info.node;
    a.kind = staged                                       ? TensorAllocation::Kind::kStaging
             : info.kind == TensorInfo::Kind::kActivation ? TensorAllocation::Kind::kActivation
                                                          : TensorAllocation::Kind::kActivationGrad;
    a.floats = in.graph->node(info.node).out_shape_for(batch).numel();
    a.bytes = charged_bytes(static_cast<uint64_t>(a.floats) * sizeof(float));
    // Staging buffers and (defensively) buffers no instruction touches live for the whole step.
    const bool whole_step = staged || life.first[i] < 0;
    a.first = whole_step ? 0 : life.first[i];
    a.last = whole_step ? step_end : life.last[i];
    arena.unshared += a.bytes;
    if (a.kind == TensorAllocation::Kind::kActivation && a.first < forward_count && a.last >= forward_count) {
      arena.kept += a.bytes;
      ++arena.kept_buffers;
    }
    buffers.push_back(ArenaBuffer{a.bytes, a.first, a.last});
    arena.allocations.push_back(a);
    if (recomputed[i] && !staged && life.again_first[i] >= 0) {
      a.recomputed = true;
      a.first = life.again_first[i];
      a.last = life.again_last[i];
      arena.unshared += a.bytes;
      buffers.push_back(ArenaBuffer{a.bytes, a.first, a.last});
      arena.allocations.push_back(a);
    }
  }
  const ArenaLayout layout = place_buffers(buffers);
  for (size_t k = 0; k < arena.allocations.size(); ++k) arena.allocations[k].offset = layout.offsets[k];
  arena.bytes = layout.bytes;
  arena.lower_bound = layout.lower_bound;
  return arena;
}

}  // namespace devmap
