#include "core/plan/offload_layout.h"

#include <algorithm>

#include "core/plan/device_budget.h"

namespace devmap {

OffloadLayout offload_layout(const Graph& graph, const std::vector<bool>& local, bool training, int optimizer_states) {
  OffloadLayout layout;
  const auto n = static_cast<size_t>(graph.size());
  layout.by_node.resize(n);
  layout.share_bytes.assign(n, 0);
  layout.host_bytes.assign(n, 0);
  uint64_t largest = 0, second = 0;
  for (int i = 0; i < graph.size(); ++i) {
    if (!local[static_cast<size_t>(i)]) continue;
    const Node& node = graph.node(i);
    uint64_t at = 0;
    for (size_t k = 0; k < node.params.size(); ++k) {
      const ParamSpec& spec = node.params[k];
      if (!spec.trained) continue;
      const uint64_t bytes = charged_bytes(static_cast<uint64_t>(spec.shape.numel()) * sizeof(float));
      StagedParam s;
      s.param = static_cast<int>(k);
      s.value_offset = at;
      at += bytes;
      s.grad_offset = training ? at : s.value_offset;
      if (training) at += bytes;
      layout.by_node[static_cast<size_t>(i)].push_back(s);
      layout.host_bytes[static_cast<size_t>(i)] += bytes * (training ? 2 + static_cast<uint64_t>(optimizer_states) : 1);
    }
    layout.share_bytes[static_cast<size_t>(i)] = at;
    if (at > largest) {
      second = largest;
      largest = at;
    } else if (at > second) {
      second = at;
    }
  }
  layout.staging_bytes = largest + second;
  return layout;
}

}  // namespace devmap
