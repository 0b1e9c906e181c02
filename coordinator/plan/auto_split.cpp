#include "coordinator/plan/auto_split.h"

#include <sstream>

namespace devmap {

std::vector<SplitShare> proposed_split(const Config& config, const NoFit& no_fit) {
  const int op = config.graph.find(no_fit.largest_op);
  if (op < 0) return {};
  const Node& node = config.graph.node(op);
  if (node.device != kAutoDevice || !node.part_of.empty() || !split_refusal(node).empty()) return {};
  std::vector<SplitShare> shares;
  double total = 0;
  for (const DeviceSpec& d : config.devices) {
    if (!node.schema->runs_on(d.kind)) continue;
    if (d.memory_limit <= 0 || static_cast<uint64_t>(d.memory_limit) >= no_fit.largest_op_bytes) return {};
    shares.push_back({d.name, static_cast<double>(d.memory_limit)});
    total += static_cast<double>(d.memory_limit);
  }
  if (shares.size() < 2) return {};
  std::vector<double> fractions;
  for (SplitShare& s : shares) fractions.push_back(s.share /= total);
  try {
    split_bounds(node.attrs.get_int(node.schema->split_attr), fractions, "op '" + node.name + "' split");
  } catch (const Error&) {
    return {};
  }
  return shares;
}

void apply_split(Config& config, const std::string& op, const std::vector<SplitShare>& shares) {
  std::vector<std::vector<SplitShare>> splits(config.graph.nodes().size());
  const int index = config.graph.find(op);
  splits.at(static_cast<size_t>(index)) = shares;
  std::vector<int> origin;
  Graph graph = split_ops(config.graph, splits, origin);
  std::vector<std::string> reasons;
  for (int i = 0; i < graph.size(); ++i) {
    const size_t from = static_cast<size_t>(origin[static_cast<size_t>(i)]);
    if (static_cast<int>(from) == index)
      reasons.push_back(graph.node(i).part_of.empty() ? Config::kPlacedBySplitConsumer : "auto split");
    else
      reasons.push_back(from < config.placement_reason.size() ? config.placement_reason[from] : "");
  }
  config.graph = std::move(graph);
  config.placement_reason = std::move(reasons);
}

std::string split_key_text(const std::vector<SplitShare>& shares) {
  std::ostringstream out;
  out << "{";
  for (size_t k = 0; k < shares.size();) {
    size_t end = k + 1;  // the parts on shares[k]'s device that follow it
    while (end < shares.size() && shares[end].device == shares[k].device) ++end;
    out << (k ? ", " : "") << shares[k].device << ": " << (end - k > 1 ? "[" : "");
    for (size_t j = k; j < end; ++j) out << (j > k ? ", " : "") << shares[j].share;
    out << (end - k > 1 ? "]" : "");
    k = end;
  }
  out << "}";
  return out.str();
}

}  // namespace devmap
