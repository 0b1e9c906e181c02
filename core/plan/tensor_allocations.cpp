#include "core/plan/tensor_allocations.h"

#include <cassert>

namespace devmap {

std::vector<TensorAllocation> tensor_allocations(const TensorAllocationInputs& in, int64_t batch) {
  assert(in.graph && in.program && in.uses_tensor && in.edge_of && in.external);
  std::vector<bool> fused(static_cast<size_t>(in.program->tensor_count()), false);
  if (in.fused_relus != nullptr)
    for (const FusedRelu& f : *in.fused_relus) fused[static_cast<size_t>(f.relu)] = true;
  std::vector<TensorAllocation> out;
  for (int t = 0; t < in.program->tensor_count(); ++t) {
    const auto i = static_cast<size_t>(t);
    if (!(*in.uses_tensor)[i] || fused[i]) continue;
    const TensorInfo& info = in.program->tensors[i];
    const bool staged =
        (info.kind == TensorInfo::Kind::kActivation && (*in.external)[static_cast<size_t>(info.node)]) ||
        (*in.edge_of)[i] >= 0;
    if (staged && in.host_memory) continue;  // used in place
    TensorAllocation a;
    a.tensor = t;
    a.node = info.node;
    a.kind = staged                                       ? TensorAllocation::Kind::kStaging
             : info.kind == TensorInfo::Kind::kActivation ? TensorAllocation::Kind::kActivation
                                                          : TensorAllocation::Kind::kActivationGrad;
    a.floats = in.graph->node(info.node).out_shape_for(batch).numel();
    out.push_back(a);
  }
  return out;
}

}  // namespace devmap
