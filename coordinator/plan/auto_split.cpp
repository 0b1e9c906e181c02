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

namespace {

// Shares of `weight` (one per device, positive), each at most its `cap`,
// what a capped device cannot take spread over the others by weight.
// Empty when the caps sum to less than 1.
std::vector<double> capped_shares(const std::vector<double>& weight, const std::vector<double>& cap) {
  double cap_sum = 0;
  for (double c : cap) cap_sum += c;
  if (cap_sum < 1) return {};
  std::vector<double> share(weight.size(), 0);
  std::vector<bool> capped(weight.size(), false);
  for (size_t round = 0; round < weight.size(); ++round) {
    double left = 1, free_weight = 0;
    for (size_t i = 0; i < weight.size(); ++i) {
      if (capped[i])
        left -= share[i];
      else
        free_weight += weight[i];
    }
    bool changed = false;
    for (size_t i = 0; i < weight.size(); ++i) {
      if (capped[i]) continue;
      share[i] = left * weight[i] / free_weight;
      if (share[i] > cap[i]) {
        share[i] = cap[i];
        capped[i] = changed = true;
      }
    }
    if (!changed) break;
  }
  return share;
}

// `fractions` with each device's share cut into parts (offload_parts),
// if every part keeps an output; else empty.
std::vector<SplitShare> checked_parts(const Config& config, const Node& node, const std::vector<SplitShare>& shares) {
  std::vector<SplitShare> parts = offload_parts(config, node, shares);
  std::vector<double> fractions;
  for (const SplitShare& s : parts) fractions.push_back(s.share);
  try {
    split_bounds(node.attrs.get_int(node.schema->split_attr), fractions, "op '" + node.name + "' split");
  } catch (const Error&) {
    return {};
  }
  return parts;
}

}  // namespace

std::vector<ProposedSplit> proposed_splits(const Config& config, const NoFit& no_fit,
                                           const std::map<std::string, double>& flops_per_s) {
  const int op = config.graph.find(no_fit.largest_op);
  if (op < 0) return {};
  const Node& node = config.graph.node(op);
  if (node.device != kAutoDevice || !node.part_of.empty() || !split_refusal(node).empty()) return {};
  std::vector<const DeviceSpec*> devices;
  for (const DeviceSpec& d : config.devices) {
    if (!node.schema->runs_on(d.kind)) continue;
    if (d.memory_limit <= 0 || static_cast<uint64_t>(d.memory_limit) >= no_fit.largest_op_bytes) return {};
    devices.push_back(&d);
  }
  if (devices.size() < 2) return {};
  double slowest = 0;
  for (const auto& [name, rate] : flops_per_s) slowest = slowest > 0 ? std::min(slowest, rate) : rate;
  std::vector<double> speed, limit, cap;
  for (const DeviceSpec* d : devices) {
    const auto rate = flops_per_s.find(d->name);
    speed.push_back(rate != flops_per_s.end() && rate->second > 0 ? rate->second : std::max(slowest, 1.0));
    limit.push_back(static_cast<double>(d->memory_limit));
    cap.push_back(d->offload ? 1.0 : std::min(1.0, limit.back() / static_cast<double>(no_fit.largest_op_bytes)));
  }
  auto as_shares = [&](const std::vector<double>& fractions) {
    std::vector<SplitShare> shares;
    for (size_t i = 0; i < devices.size(); ++i) shares.push_back({devices[i]->name, fractions[i]});
    return checked_parts(config, node, shares);
  };
  std::vector<ProposedSplit> out;
  if (const std::vector<double> by_speed = capped_shares(speed, cap); !by_speed.empty())
    if (std::vector<SplitShare> s = as_shares(by_speed); !s.empty())
      out.push_back({std::move(s), "by the devices' speed, within what each memory_limit holds of it"});
  if (std::vector<SplitShare> s = as_shares(capped_shares(limit, std::vector<double>(limit.size(), 1.0)));
      !s.empty() && (out.empty() || split_key_text(s) != split_key_text(out.front().shares)))
    out.push_back({std::move(s), "in proportion to the devices' memory_limit"});
  return out;
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
  config.auto_splits[op] = shares;
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

std::string split_description(const std::vector<SplitShare>& shares) {
  constexpr size_t kMostPartsAsKey = 4;
  std::ostringstream runs;
  bool equal = true;
  for (size_t k = 0; k < shares.size();) {
    size_t end = k + 1;  // the parts on shares[k]'s device that follow it
    while (end < shares.size() && shares[end].device == shares[k].device) ++end;
    for (size_t j = k; j < end; ++j) equal = equal && shares[j].share == shares[k].share;
    runs << (k ? ", " : "") << end - k << " of " << shares[k].share << " on " << shares[k].device;
    k = end;
  }
  if (shares.size() <= kMostPartsAsKey || !equal) return "as `split: " + split_key_text(shares) + "`";
  return "into " + std::to_string(shares.size()) + " parts (" + runs.str() + ")";
}

}  // namespace devmap
