#include "coordinator/plan/auto_split.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace devmap {

namespace {

// Parts of at most an eighth of its memory_limit each (parameters and, when
// training, gradients), so that the two a device stages fit in a quarter.
constexpr uint64_t kPartsPerLimit = 8;
constexpr int64_t kMaxPartsPerDevice = 64;

const DeviceSpec* device_named(const Config& config, const std::string& name) {
  for (const DeviceSpec& d : config.devices)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace

std::vector<SplitShare> offload_parts(const Config& config, const Node& node, const std::vector<SplitShare>& shares) {
  const double staged =
      static_cast<double>(node.param_bytes()) * (config.job == Job::kPredict ? 1.0 : 2.0);  // values + gradients
  const double outputs = static_cast<double>(node.attrs.get_int(node.schema->split_attr));
  std::vector<SplitShare> out;
  for (const SplitShare& s : shares) {
    const DeviceSpec* d = device_named(config, s.device);
    int64_t parts = 1;
    if (d != nullptr && d->offload && d->memory_limit > 0) {
      const double most = static_cast<double>(static_cast<uint64_t>(d->memory_limit) / kPartsPerLimit);
      parts = static_cast<int64_t>(std::ceil(s.share * staged / most));
      // Every part keeps at least one output (rounding may still take one
      // away: split_bounds refuses that, and the caller proposes nothing).
      parts = std::clamp<int64_t>(parts, 1, std::min<int64_t>(kMaxPartsPerDevice, std::llround(s.share * outputs)));
    }
    for (int64_t k = 0; k < parts; ++k) out.push_back({s.device, s.share / static_cast<double>(parts)});
  }
  return out;
}

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
  for (SplitShare& s : shares) s.share /= total;
  shares = offload_parts(config, node, shares);
  std::vector<double> fractions;
  for (const SplitShare& s : shares) fractions.push_back(s.share);
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
      reasons.push_back(graph.node(i).name == op ? Config::kPlacedBySplitConsumer
                                                 : "auto split");  // the concat: op's name
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
