#include "coordinator/plan/auto_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
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

// Shares summing to 1 that balance the devices' times, device i taking
// fixed[i] + per_share[i] * share (per_share positive) when its share is
// above 0, each share at most its `cap`: the level t at which the shares
// clamp((t - fixed) / per_share, 0, cap) sum to 1, found by bisection (the
// sum grows with t). A device whose fixed time is above the level gets
// none. Empty when the caps sum to less than 1.
std::vector<double> balanced_shares(const std::vector<double>& fixed, const std::vector<double>& per_share,
                                    const std::vector<double>& cap) {
  double cap_sum = 0, high = 0;
  for (size_t i = 0; i < cap.size(); ++i) {
    cap_sum += cap[i];
    high = std::max(high, fixed[i] + per_share[i] * cap[i]);
  }
  if (cap_sum < 1) return {};
  auto shares_at = [&](double level) {
    std::vector<double> share(cap.size());
    for (size_t i = 0; i < cap.size(); ++i) share[i] = std::clamp((level - fixed[i]) / per_share[i], 0.0, cap[i]);
    return share;
  };
  auto sum = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  double low = 0;
  constexpr int kRounds = 200;  // halves the interval to well below a double's precision
  for (int k = 0; k < kRounds; ++k) {
    const double mid = low + (high - low) / 2;
    (sum(shares_at(mid)) < 1 ? low : high) = mid;
  }
  std::vector<double> share = shares_at(high);
  const double total = sum(share);
  for (double& x : share) x /= total;  // the level's rounding: the sum is 1 within an ulp or so
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

// Each device's time for a part of `node` as balanced_shares takes it:
// fixed (the op's whole input in over its link) and per share (its share
// of the FLOPs at its speed, of the output over its link); training moves
// each again as a gradient. A device missing from `rates` counts as the
// slowest, with free links.
struct PartTimes {
  std::vector<double> fixed, per_share;
};

PartTimes part_times(const Config& config, const Node& node, const std::vector<const DeviceSpec*>& devices,
                     const std::map<std::string, SplitDeviceRate>& rates) {
  const bool training = config.job != Job::kPredict;
  const double flops = node.forward_flops(1) + (training ? node.backward_flops(1) : 0.0);
  const double ways = training ? 2.0 : 1.0;
  double in_bytes = 0;
  for (const Shape& s : node.input_shapes) in_bytes += static_cast<double>(s.numel()) * 4 * ways;
  const double out_bytes = static_cast<double>(node.activation_bytes(1)) * ways;
  double slowest = 0;
  for (const auto& [name, rate] : rates)
    if (rate.flops_per_s > 0) slowest = slowest > 0 ? std::min(slowest, rate.flops_per_s) : rate.flops_per_s;
  PartTimes t;
  for (const DeviceSpec* d : devices) {
    const auto rate = rates.find(d->name);
    const bool known = rate != rates.end() && rate->second.flops_per_s > 0;
    const double speed = known ? rate->second.flops_per_s : std::max(slowest, 1.0);
    const double link = known ? rate->second.link_bytes_per_s : 0;
    t.fixed.push_back(link > 0 ? in_bytes / link : 0);
    t.per_share.push_back(std::max(flops, 1.0) / speed + (link > 0 ? out_bytes / link : 0));
  }
  return t;
}

// The devices that run `node`, if auto may split it over them (the planner
// places it, it is no part, it can split, and no data-parallel replicas:
// splits and replicas are not tested together); else empty.
std::vector<const DeviceSpec*> split_devices(const Config& config, const Node& node) {
  if (node.device != kAutoDevice || !node.part_of.empty() || !split_refusal(node).empty()) return {};
  if (config.data_parallel.replicas > 1) return {};
  std::vector<const DeviceSpec*> devices;
  for (const DeviceSpec& d : config.devices)
    if (node.schema->runs_on(d.kind)) devices.push_back(&d);
  return devices;
}

// `fractions` (one per device of `devices`) as the split's shares, the
// zero ones left out, each offloaded device's cut into parts; empty when a
// part would get no output.
std::vector<SplitShare> shares_of(const Config& config, const Node& node, const std::vector<const DeviceSpec*>& devices,
                                  const std::vector<double>& fractions) {
  std::vector<SplitShare> shares;
  for (size_t i = 0; i < devices.size(); ++i)
    if (fractions[i] > 0) shares.push_back({devices[i]->name, fractions[i]});
  return checked_parts(config, node, shares);
}

constexpr const char* kBalancedBasis = "shares by the devices' speed and the bytes each part moves";

}  // namespace

std::optional<ProposedSplit> split_for_speed(const Config& config,
                                             const std::map<std::string, SplitDeviceRate>& rates) {
  // The op with the most FLOPs among those auto may split.
  const Node* heaviest = nullptr;
  std::vector<const DeviceSpec*> devices;
  for (const Node& n : config.graph.nodes()) {
    if (heaviest && n.forward_flops(1) <= heaviest->forward_flops(1)) continue;
    std::vector<const DeviceSpec*> d = split_devices(config, n);
    if (d.size() < 2 || n.forward_flops(1) <= 0) continue;
    heaviest = &n;
    devices = std::move(d);
  }
  if (!heaviest) return std::nullopt;
  double slowest = 0, fastest = 0;
  for (const DeviceSpec* d : devices) {
    const auto rate = rates.find(d->name);
    if (rate == rates.end() || rate->second.flops_per_s <= 0) return std::nullopt;
    slowest = slowest > 0 ? std::min(slowest, rate->second.flops_per_s) : rate->second.flops_per_s;
    fastest = std::max(fastest, rate->second.flops_per_s);
  }
  if (fastest < kUnequalSpeeds * slowest) return std::nullopt;
  const PartTimes times = part_times(config, *heaviest, devices, rates);
  const std::vector<double> fractions =
      balanced_shares(times.fixed, times.per_share, std::vector<double>(devices.size(), 1.0));
  std::vector<SplitShare> shares = shares_of(config, *heaviest, devices, fractions);
  if (shares.size() < 2) return std::nullopt;
  return ProposedSplit{std::move(shares), kBalancedBasis, heaviest->name};
}

std::vector<ProposedSplit> proposed_splits(const Config& config, const NoFit& no_fit,
                                           const std::map<std::string, SplitDeviceRate>& rates) {
  const int op = config.graph.find(no_fit.largest_op);
  if (op < 0) return {};
  const Node& node = config.graph.node(op);
  const std::vector<const DeviceSpec*> devices = split_devices(config, node);
  if (devices.size() < 2) return {};
  for (const DeviceSpec* d : devices)
    if (d->memory_limit <= 0 || static_cast<uint64_t>(d->memory_limit) >= no_fit.largest_op_bytes) return {};
  const PartTimes times = part_times(config, node, devices, rates);
  std::vector<double> limit, cap;
  for (const DeviceSpec* d : devices) {
    limit.push_back(static_cast<double>(d->memory_limit));
    cap.push_back(d->offload ? 1.0 : std::min(1.0, limit.back() / static_cast<double>(no_fit.largest_op_bytes)));
  }
  auto as_shares = [&](const std::vector<double>& fractions) { return shares_of(config, node, devices, fractions); };
  std::vector<ProposedSplit> out;
  if (const std::vector<double> by_time = balanced_shares(times.fixed, times.per_share, cap); !by_time.empty())
    if (std::vector<SplitShare> s = as_shares(by_time); !s.empty())
      out.push_back(
          {std::move(s), std::string(kBalancedBasis) + ", within what each memory_limit holds of it", node.name});
  std::vector<double> per_limit;  // in proportion to the limits: balanced, with no fixed time
  for (double l : limit) per_limit.push_back(1 / l);
  if (std::vector<SplitShare> s = as_shares(
          balanced_shares(std::vector<double>(limit.size(), 0.0), per_limit, std::vector<double>(limit.size(), 1.0)));
      !s.empty() && (out.empty() || split_key_text(s) != split_key_text(out.front().shares)))
    out.push_back({std::move(s), "shares in proportion to the devices' memory_limit", node.name});
  // On one offloaded device alone, a part at a time through its staging
  // pool, leaving the others' memory to other ops.
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i]->offload) continue;
    std::vector<double> alone(devices.size(), 0.0);
    alone[i] = 1.0;
    if (std::vector<SplitShare> s = as_shares(alone); !s.empty())
      out.push_back(
          {std::move(s), "all on " + devices[i]->name + ", whose offload stages a part at a time", node.name});
  }
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
