#include "core/plan/recompute_choice.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/plan/recompute.h"

namespace devmap {
namespace {

// Per op: the backward pass reads its output (its own gradient rule, or a
// consumer's that reads its inputs).
std::vector<bool> read_in_backward(const Graph& g) {
  std::vector<bool> read(static_cast<size_t>(g.size()), false);
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (!n.schema->differentiable) continue;
    if (n.schema->backward_needs_output) read[static_cast<size_t>(i)] = true;
    if (n.schema->backward_needs_inputs)
      for (int in : n.inputs) read[static_cast<size_t>(in)] = true;
  }
  return read;
}

// The ops to recompute with `node`: its inputs, recursively, that the
// backward pass does not read and that are not recomputed already, inputs
// first. False when one of them may not be recomputed.
bool inputs_to_recompute(const Graph& g, const std::vector<bool>& needed, const std::vector<bool>& read, int node,
                         std::vector<int>& out) {
  for (int in : g.node(node).inputs) {
    const Node& n = g.node(in);
    if (n.schema->fed_by_coordinator() || read[static_cast<size_t>(in)] || n.recomputed) continue;
    if (std::find(out.begin(), out.end(), in) != out.end()) continue;
    if (n.recompute == Node::Recompute::kNever || !can_recompute(g, needed, in)) return false;
    if (!inputs_to_recompute(g, needed, read, in, out)) return false;
    out.push_back(in);
  }
  return true;
}

int64_t device_total(const MemoryPlan& plan, const std::string& device) {
  const DeviceMemoryPlan* d = plan.find(device);
  return d ? static_cast<int64_t>(d->total()) : 0;
}

}  // namespace

std::vector<RecomputePick> choose_recomputes(Graph& g, const RecomputeRequest& request) {
  const std::vector<bool> needed(static_cast<size_t>(g.size()), true);
  const std::vector<bool> read = read_in_backward(g);
  std::vector<RecomputePick> picks;
  auto seconds_of = [&](const RecomputePick& p) {
    double s = request.forward_seconds(p.node);
    for (int w : p.with) s += request.forward_seconds(w);
    return s;
  };
  // Pinned first, all at once.
  MemoryPlan plan = request.plan(g);
  const MemoryPlan unpinned = plan;
  for (int i = 0; i < g.size(); ++i) {
    Node& n = g.node(i);
    if (n.recompute != Node::Recompute::kAlways) continue;
    if (!can_recompute(g, needed, i))
      throw_invalid(n.loc.prefix() + "op '" + n.name + "' (" + n.op() +
                    ") has recompute: always, but it cannot be recomputed: an input, a loss or metric, or an op that "
                    "reads from or feeds another device is not (set recompute: auto or never)");
    RecomputePick p{i, {}, n.device, true, 0, 0};
    if (!inputs_to_recompute(g, needed, read, i, p.with)) p.with.clear();  // those stay alive instead
    n.recomputed = true;
    for (int w : p.with) g.node(w).recomputed = true;
    p.seconds = seconds_of(p);
    picks.push_back(std::move(p));
  }
  if (!picks.empty()) {
    plan = request.plan(g);
    for (RecomputePick& p : picks) p.saved_bytes = device_total(unpinned, p.device) - device_total(plan, p.device);
  }
  std::vector<bool> tried(static_cast<size_t>(g.size()), false);
  while (request.choose) {
    const DeviceMemoryPlan* over = nullptr;
    for (const DeviceMemoryPlan& d : plan.devices)
      if (!d.fits()) {
        over = &d;
        break;
      }
    if (!over) break;
    const std::string device = over->device;
    // The cheapest candidate on that device, in seconds per byte.
    RecomputePick best;
    double best_rate = 0;
    for (int i = 0; i < g.size(); ++i) {
      const Node& n = g.node(i);
      if (tried[static_cast<size_t>(i)] || n.recomputed || n.device != device || !read[static_cast<size_t>(i)] ||
          n.recompute != Node::Recompute::kAuto || !can_recompute(g, needed, i))
        continue;
      RecomputePick p{i, {}, device, false, 0, 0};
      if (!inputs_to_recompute(g, needed, read, i, p.with)) continue;
      p.seconds = seconds_of(p);
      const double bytes = static_cast<double>(std::max<int64_t>(n.activation_bytes(plan.batch), 1));
      const double rate = p.seconds / bytes;
      if (best.node < 0 || rate < best_rate) {
        best = p;
        best_rate = rate;
      }
    }
    if (best.node < 0) break;
    tried[static_cast<size_t>(best.node)] = true;
    g.node(best.node).recomputed = true;
    for (int w : best.with) g.node(w).recomputed = true;
    MemoryPlan next = request.plan(g);
    best.saved_bytes = device_total(plan, device) - device_total(next, device);
    if (best.saved_bytes <= 0) {  // it saves nothing here: undo
      g.node(best.node).recomputed = false;
      for (int w : best.with) g.node(w).recomputed = false;
      continue;
    }
    plan = std::move(next);
    picks.push_back(std::move(best));
  }
  return picks;
}

}  // namespace devmap
