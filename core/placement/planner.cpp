#include "core/placement/planner.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>

#include "core/base/format_bytes.h"
#include "core/base/total_order.h"
#include "core/placement/search.h"

namespace devmap {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

uint64_t round_up_mib(uint64_t bytes) {
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

std::vector<std::string> names_of(const PlacementRequest& r, const std::vector<int>& placement) {
  std::vector<std::string> out;
  for (int d : placement) out.push_back(d >= 0 ? r.devices[static_cast<size_t>(d)].name : "");
  return out;
}

SearchResult search(PlacementScorer& scorer, ScoreLog& log) {
  const std::vector<int> chain =
      scorer.device_count() <= kChainSearchMaxDevices ? chain_of(scorer) : std::vector<int>{};
  if (!chain.empty()) {
    SearchResult r = search_chain(scorer, log, chain);
    if (!r.best.empty() && log.score(scorer, r.best).fits) return r;
  }
  // Not a chain, or no contiguous placement fits: the heuristic, which may
  // return to a device.
  return search_graph(scorer, log);
}

// The chosen plan's figures, from the scorer's detail of its choice.
PlacementPlan describe_plan(PlacementScorer& scorer, const std::vector<int>& placement, const ScheduleChoice& choice) {
  const PlacementRequest& r = scorer.request();
  const Graph& g = *r.graph;
  PlacementPlan plan;
  plan.placement = names_of(r, placement);
  plan.choice = choice;
  ScoredPlan detail = scorer.detail(placement, choice);
  for (size_t k = 0; k < detail.partition.devices.size(); ++k) {
    DeviceForecast f;
    f.device = detail.partition.devices[k];
    f.busy_seconds = detail.schedule.busy.at(k);
    f.idle_seconds = std::max(0.0, detail.schedule.makespan - f.busy_seconds);
    const DeviceMemoryPlan* m = detail.memory.find(f.device);
    f.memory_bytes = m ? m->total() : 0;
    f.memory_limit = m ? m->limit : 0;
    for (int op : scorer.compute_ops())
      if (plan.placement[static_cast<size_t>(op)] == f.device) f.ops.push_back(g.node(op).name);
    plan.devices.push_back(std::move(f));
  }
  for (const Edge& e : detail.partition.edges) {
    CrossingTensor c;
    c.tensor = e.name;
    c.producer = e.producer;
    c.consumers = e.consumers;
    c.bytes_per_step = static_cast<uint64_t>(e.bytes(r.batch)) * e.consumers.size();
    plan.bytes_per_step += c.bytes_per_step;
    plan.crossings.push_back(std::move(c));
  }
  plan.memory = std::move(detail.memory);
  std::set<int64_t> sizes;
  for (int64_t s : micro_batch_sizes(r.batch, choice.micro_batch)) sizes.insert(s);
  for (int op = 0; op < g.size(); ++op) {
    const int d = placement[static_cast<size_t>(op)];
    if (d < 0 || !scorer.computed(op)) continue;
    bool estimated = false;
    for (int64_t s : sizes) estimated = estimated || scorer.estimated(op, d, s);
    if (estimated) plan.estimated.push_back(g.node(op).name + " on " + r.devices[static_cast<size_t>(d)].name);
  }
  return plan;
}

RejectedPlan over_budget(const PlacementRequest& r, const std::vector<int>& placement, const ScheduleChoice& choice,
                         const OverBudget& over) {
  RejectedPlan x;
  x.placement = names_of(r, placement);
  x.choice = choice;
  x.why = RejectedPlan::Why::kOverBudget;
  x.device = over.device >= 0 ? r.devices[static_cast<size_t>(over.device)].name : "";
  x.need = over.need;
  x.limit = over.limit;
  return x;
}

// The runners-up: the `most` fastest choices over a budget that would have
// been faster (of the chosen placement and of the fastest others, scored
// again with every choice simulated), then the placements over a budget
// at any micro-batch, then the `most` fastest slower placements.
std::vector<RejectedPlan> runners_up(PlacementScorer& scorer, const ScoreLog& log, const std::vector<int>& chosen,
                                     const ScheduleChoice& choice, int most) {
  const PlacementRequest& r = scorer.request();
  const size_t keep = static_cast<size_t>(std::max(most, 0));
  std::vector<std::pair<const std::vector<int>*, const PlacementScore*>> fitting, never;
  for (const auto& [placement, s] : log.all()) {
    if (s.fits && placement != chosen) fitting.emplace_back(&placement, &s);
    if (!s.fits && s.least_overflow > 0) never.emplace_back(&placement, &s);
  }
  std::stable_sort(fitting.begin(), fitting.end(), [](const auto& a, const auto& b) {
    return sorts_before(a.second->best.step_seconds, b.second->best.step_seconds);
  });
  std::stable_sort(never.begin(), never.end(),
                   [](const auto& a, const auto& b) { return a.second->least_overflow < b.second->least_overflow; });
  if (fitting.size() > keep) fitting.resize(keep);
  if (never.size() > keep) never.resize(keep);

  std::vector<RejectedPlan> out;
  std::vector<const std::vector<int>*> again = {&chosen};
  for (const auto& f : fitting) again.push_back(f.first);
  for (const std::vector<int>* p : again) {
    const PlacementScore full = scorer.score(*p, true);
    if (!full.faster || full.faster->step_seconds >= choice.step_seconds) continue;
    RejectedPlan x = over_budget(r, *p, *full.faster, full.faster_over);
    // The memory its pipeline plans (the score may have stopped at a bound).
    const ScoredPlan detail = scorer.detail(*p, x.choice);
    const DeviceMemoryPlan* worst = nullptr;
    for (const DeviceMemoryPlan& d : detail.memory.devices)
      if (!d.fits() && (!worst || d.total() - d.limit > worst->total() - worst->limit)) worst = &d;
    if (worst) {
      x.device = worst->device;
      x.need = worst->total();
      x.limit = worst->limit;
    }
    out.push_back(std::move(x));
  }
  std::stable_sort(out.begin(), out.end(), [](const RejectedPlan& a, const RejectedPlan& b) {
    return sorts_before(a.choice.step_seconds, b.choice.step_seconds);
  });
  if (out.size() > keep) out.resize(keep);
  for (const auto& [placement, s] : never) out.push_back(over_budget(r, *placement, ScheduleChoice{}, s->faster_over));
  for (const auto& [placement, s] : fitting) {
    RejectedPlan x;
    x.placement = names_of(r, *placement);
    x.choice = s->best;
    x.slower_fraction = (s->best.step_seconds - choice.step_seconds) / choice.step_seconds;
    out.push_back(std::move(x));
  }
  return out;
}

// For each device, the least memory_limit that makes some scored placement
// fit with every other limit as it is.
std::vector<FitSuggestion> raise_suggestions(const PlacementRequest& r, const ScoreLog& log) {
  const size_t nd = r.devices.size();
  std::vector<uint64_t> least(nd, std::numeric_limits<uint64_t>::max());
  for (const auto& [placement, s] : log.all()) {
    std::vector<size_t> over;
    for (size_t d = 0; d < nd; ++d)
      if (r.devices[d].memory_limit && s.least_need[d] > r.devices[d].memory_limit) over.push_back(d);
    if (over.size() == 1) least[over[0]] = std::min(least[over[0]], s.least_need[over[0]]);
  }
  std::vector<FitSuggestion> out;
  for (size_t d = 0; d < nd; ++d)
    if (least[d] != std::numeric_limits<uint64_t>::max())
      out.push_back(FitSuggestion{FitSuggestion::Kind::kRaiseLimit, r.devices[d].name, round_up_mib(least[d])});
  std::stable_sort(out.begin(), out.end(), [&](const FitSuggestion& a, const FitSuggestion& b) {
    auto limit = [&](const FitSuggestion& s) {
      for (const PlannerDevice& d : r.devices)
        if (d.name == s.device) return d.memory_limit;
      return uint64_t{0};
    };
    return a.bytes - limit(a) < b.bytes - limit(b);
  });
  return out;
}

// An added device without a limit, shaped like the first declared one:
// the least memory it needs in a placement that then fits every declared
// device, if any.
std::optional<uint64_t> added_device_need(const PlacementRequest& request) {
  PlacementRequest r = request;
  PlannerDevice added = r.devices.front();
  added.name = "an added device";
  added.memory_limit = 0;
  r.devices.push_back(added);
  if (!r.links.empty()) {
    for (auto& row : r.links) row.push_back(row.front());
    r.links.push_back(r.links.front());
  }
  r.max_evaluations = std::max(1, request.max_evaluations / 2);
  PlacementScorer scorer(r);
  ScoreLog log;
  search(scorer, log);
  const size_t extra = r.devices.size() - 1;
  std::optional<uint64_t> best;
  for (const auto& [placement, s] : log.all()) {
    if (s.least_overflow > 0) continue;
    if (!best || s.least_need[extra] < *best) best = s.least_need[extra];
  }
  return best;
}

NoFit diagnose(PlacementScorer& scorer, const ScoreLog& log, const std::vector<int>& closest) {
  const PlacementRequest& r = scorer.request();
  const Graph& g = *r.graph;
  NoFit f;
  f.micro_batch = scorer.least_micro_batch();
  const std::vector<std::string> names = names_of(r, closest);
  f.closest = describe_placement(g, names);
  // The closest placement at its least memory: lock-step, the most micro-batches.
  const ScheduleChoice least{static_cast<int>((r.batch + f.micro_batch - 1) / f.micro_batch), f.micro_batch,
                             PipelineKind::kNone};
  const ScoredPlan detail = scorer.detail(closest, least);
  for (const DeviceMemoryPlan& d : detail.memory.devices) {
    if (d.fits()) continue;
    DeviceShortfall s{d.device, d.total(), d.limit, {}};
    std::vector<OpMemory> ops = d.ops;
    std::stable_sort(ops.begin(), ops.end(), [](const OpMemory& a, const OpMemory& b) {
      return a.total() + a.workspace > b.total() + b.workspace;
    });
    for (size_t k = 0; k < std::min<size_t>(3, ops.size()); ++k)
      s.largest_ops.emplace_back(ops[k].op, ops[k].total() + ops[k].workspace);
    f.shortfalls.push_back(std::move(s));
  }
  for (int op : scorer.compute_ops())
    if (scorer.op_least_bytes(op) > f.largest_op_bytes) {
      f.largest_op_bytes = scorer.op_least_bytes(op);
      f.largest_op = g.node(op).name;
      f.largest_op_part_of = g.node(op).part_of;
    }
  f.suggestions = raise_suggestions(r, log);
  if (const std::optional<uint64_t> need = added_device_need(r))
    f.suggestions.push_back(FitSuggestion{FitSuggestion::Kind::kAddDevice, "", round_up_mib(*need)});
  return f;
}

}  // namespace

std::string RejectedPlan::reason() const {
  if (why == Why::kOverBudget)
    return "over the budget of " + device + " by " + format_bytes(need > limit ? need - limit : 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "slower by %.1f%%", 100.0 * slower_fraction);
  return buf;
}

std::string describe_placement(const Graph& graph, const std::vector<std::string>& placement) {
  std::string out;
  std::string device;
  std::string first, last;
  auto flush = [&] {
    if (device.empty()) return;
    out += (out.empty() ? "" : ", ") + device + " " + first + (last != first ? ".." + last : "");
  };
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(i);
    if (n.schema->fed_by_coordinator() || static_cast<size_t>(i) >= placement.size() ||
        placement[static_cast<size_t>(i)].empty())
      continue;
    if (placement[static_cast<size_t>(i)] != device) {
      flush();
      device = placement[static_cast<size_t>(i)];
      first = n.name;
    }
    last = n.name;
  }
  flush();
  return out;
}

PlacementResult plan_placement(const PlacementRequest& request) {
  PlacementScorer scorer(request);
  ScoreLog log;
  const SearchResult found = search(scorer, log);
  PlacementResult result;
  const PlacementScore& best = log.score(scorer, found.best);
  if (!best.fits) {
    result.no_fit = diagnose(scorer, log, found.best);
    return result;
  }
  result.fits = true;
  result.plan = describe_plan(scorer, found.best, best.best);
  result.plan.runners_up = runners_up(scorer, log, found.best, best.best, request.runners_up);
  result.plan.method = found.method;
  result.plan.exact = found.exact;
  result.plan.evaluations = scorer.evaluations();
  return result;
}

}  // namespace devmap
