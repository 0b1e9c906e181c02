#include "core/placement/scorer.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "core/base/error.h"
#include "core/base/total_order.h"
#include "core/plan/device_budget.h"

namespace devmap {
namespace {

// The choices for `counts`: one per distinct micro-batch (64 in 5 and in 6
// parts runs as 13 and 11 samples), every kind for more than one.
std::vector<ScheduleChoice> choices_for(const std::vector<int>& counts, int64_t batch,
                                        const std::vector<PipelineKind>& kinds, std::set<int64_t>& seen) {
  std::vector<ScheduleChoice> out;
  for (int c : counts) {
    if (c < 1) continue;
    const int64_t micro = (batch + std::min<int64_t>(c, batch) - 1) / std::min<int64_t>(c, batch);
    if (!seen.insert(micro).second) continue;
    ScheduleChoice s;
    s.micro_batch = micro;
    s.micro_batches = static_cast<int>((batch + micro - 1) / micro);
    if (s.micro_batches == 1) {
      out.push_back(s);
      continue;
    }
    for (PipelineKind k : kinds) {
      s.kind = k;
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace

std::vector<int> default_micro_batch_counts(int64_t batch, int most) {
  std::vector<int> out;
  int64_t last_size = 0;
  for (int c = 1; c <= most && c <= batch; ++c) {
    const int64_t size = (batch + c - 1) / c;
    if (size == last_size) continue;
    last_size = size;
    out.push_back(c);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

PlacementScorer::PlacementScorer(const PlacementRequest& request) : request_(request) {
  assert(request.graph && request.batch >= 1);
  if (request_.devices.empty()) throw_invalid("the placement planner needs at least one device");
  if (request_.micro_batch_counts.empty()) request_.micro_batch_counts = default_micro_batch_counts(request_.batch, 16);
  if (request_.kinds.empty()) request_.kinds = {PipelineKind::kNone};
  const int nd = device_count();
  if (!request_.links.empty()) {
    bool square = request_.links.size() == static_cast<size_t>(nd);
    for (const auto& row : request_.links) square = square && row.size() == static_cast<size_t>(nd);
    if (!square) throw_invalid("the planner's link table must have one row and one column per device");
  }
  graph_ = *request.graph;
  for (int i = 0; i < graph_.size(); ++i) graph_.node(i).device.clear();
  program_ = request_.training ? build_training_program(graph_) : build_inference_program(graph_, request_.outputs);
  external_ = request_.outputs;
  const int n = graph_.size();
  pinned_.assign(static_cast<size_t>(n), -1);
  sink_.assign(static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    const Node& node = graph_.node(i);
    if (node.schema->fed_by_coordinator()) external_.push_back(i);
    const std::string pin = static_cast<size_t>(i) < request_.pins.size() ? request_.pins[static_cast<size_t>(i)] : "";
    if (!pin.empty()) {
      int d = 0;
      while (d < nd && request_.devices[static_cast<size_t>(d)].name != pin) ++d;
      if (d == nd) throw_invalid("op '" + node.name + "' is pinned to '" + pin + "', which is not a declared device");
      pinned_[static_cast<size_t>(i)] = d;
    }
    if (!program_.needed[static_cast<size_t>(i)] || node.schema->fed_by_coordinator()) continue;
    if (node.schema->batch_reduced()) {
      sink_[static_cast<size_t>(i)] = true;
      continue;
    }
    compute_.push_back(i);
    if (pinned_[static_cast<size_t>(i)] < 0) free_.push_back(i);
  }
  std::set<int64_t> seen;
  choices_ = choices_for(request_.micro_batch_counts, request_.batch, request_.kinds, seen);
  // Larger counts for placements that fit none of those; lock-step among
  // them, as it needs the least memory.
  std::vector<PipelineKind> extra_kinds = request_.kinds;
  if (std::find(extra_kinds.begin(), extra_kinds.end(), PipelineKind::kNone) == extra_kinds.end())
    extra_kinds.push_back(PipelineKind::kNone);
  const int most_listed = *std::max_element(request_.micro_batch_counts.begin(), request_.micro_batch_counts.end());
  const int64_t most = std::min<int64_t>(request_.batch, kMaxMicroBatches);
  std::vector<int> larger;
  for (int64_t c = 2 * static_cast<int64_t>(most_listed); c < most; c *= 2) larger.push_back(static_cast<int>(c));
  larger.push_back(static_cast<int>(most));
  extra_ = choices_for(larger, request_.batch, extra_kinds, seen);
  least_micro_ = (request_.batch + most - 1) / most;

  op_least_.assign(static_cast<size_t>(n), 0);
  op_state_.assign(static_cast<size_t>(n), 0);
  op_floor_.assign(static_cast<size_t>(n), 0);
  const uint64_t copies = request_.training ? 2 + static_cast<uint64_t>(request_.optimizer_states) : 1;
  for (int i = 0; i < n; ++i) {
    const Node& node = graph_.node(i);
    uint64_t state = 0;
    for (const ParamSpec& p : node.params) state += charged_bytes(static_cast<uint64_t>(p.shape.numel()) * 4);
    op_state_[static_cast<size_t>(i)] = state * copies;
    const uint64_t act = charged_bytes(static_cast<uint64_t>(node.activation_bytes(least_micro_)));
    const bool read_back = std::find(request_.outputs.begin(), request_.outputs.end(), i) != request_.outputs.end();
    op_floor_[static_cast<size_t>(i)] = op_state_[static_cast<size_t>(i)] + (read_back ? 0 : act);
    op_least_[static_cast<size_t>(i)] =
        op_state_[static_cast<size_t>(i)] + act * (request_.training ? 2 : 1) + node.workspace_bytes(least_micro_);
  }
}

const PlacementScorer::Costs& PlacementScorer::costs_at(int64_t size) {
  auto it = costs_.find(size);
  if (it != costs_.end()) return it->second;
  const int n = graph_.size();
  const int nd = device_count();
  Costs c;
  c.fwd.assign(static_cast<size_t>(n * nd), 0.0);
  c.bwd.assign(static_cast<size_t>(n * nd), 0.0);
  c.estimated.assign(static_cast<size_t>(n * nd), false);
  for (int i = 0; i < n; ++i) {
    const Node& node = graph_.node(i);
    if (node.schema->fed_by_coordinator() || !program_.needed[static_cast<size_t>(i)]) continue;
    for (int d = 0; d < nd; ++d) {
      const PlannerDevice& dev = request_.devices[static_cast<size_t>(d)];
      for (int pass = 0; pass < (request_.training ? 2 : 1); ++pass) {
        std::optional<double> t;
        if (request_.measured) t = request_.measured->seconds(node, dev.name, size, pass == 1);
        if (!t) {
          t = analytical_seconds(node, dev.rates, size, pass == 1);
          c.estimated[static_cast<size_t>(i * nd + d)] = true;
        }
        (pass ? c.bwd : c.fwd)[static_cast<size_t>(i * nd + d)] = *t;
      }
    }
  }
  return costs_.emplace(size, std::move(c)).first->second;
}

double PlacementScorer::op_seconds(int node, int device, int64_t batch, bool backward) {
  const Costs& c = costs_at(batch);
  return (backward ? c.bwd : c.fwd)[static_cast<size_t>(node * device_count() + device)];
}

bool PlacementScorer::estimated(int node, int device, int64_t batch) {
  return costs_at(batch).estimated[static_cast<size_t>(node * device_count() + device)];
}

std::vector<int> PlacementScorer::complete(std::vector<int> placement) const {
  const int n = graph_.size();
  placement.resize(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    const Node& node = graph_.node(i);
    int& d = placement[static_cast<size_t>(i)];
    if (node.schema->fed_by_coordinator()) {
      d = -1;
      continue;
    }
    if (pinned_[static_cast<size_t>(i)] >= 0) {
      d = pinned_[static_cast<size_t>(i)];
      continue;
    }
    const bool computed = program_.needed[static_cast<size_t>(i)] && !sink_[static_cast<size_t>(i)];
    if (computed && d >= 0) continue;
    d = -1;
    for (int in : node.inputs)
      if (placement[static_cast<size_t>(in)] >= 0) {
        d = placement[static_cast<size_t>(in)];
        break;
      }
    if (d < 0) d = 0;
  }
  return placement;
}

void PlacementScorer::apply(const std::vector<int>& placement) {
  assert(placement.size() == static_cast<size_t>(graph_.size()));
  for (int i = 0; i < graph_.size(); ++i) {
    const int d = placement[static_cast<size_t>(i)];
    graph_.node(i).device = d >= 0 ? request_.devices[static_cast<size_t>(d)].name : "";
  }
}

PlanInputs PlacementScorer::plan_inputs(const Partition& part, const std::vector<int>& device_index,
                                        const PipelinePlan* pipeline) {
  PlanInputs in;
  in.graph = &graph_;
  in.program = &program_;
  in.partition = &part;
  for (size_t k = 0; k < part.devices.size(); ++k) {
    const PlannerDevice& dev = request_.devices[static_cast<size_t>(device_index[k])];
    PlanDevice pd;
    pd.name = dev.name;
    pd.limit = dev.memory_limit;
    pd.host_memory = dev.host_memory;
    pd.offload = dev.offload;
    pd.sets = pipeline ? pipeline->sets.at(k) : 1;
    in.devices.push_back(std::move(pd));
  }
  in.optimizer_states = request_.training ? request_.optimizer_states : 0;
  in.external = external_;
  in.edge_slots = static_cast<uint32_t>(request_.min_ring_slots);
  if (pipeline) in.ring_slots = pipeline->edge_slots;
  return in;
}

ScheduleRequest PlacementScorer::schedule_request(const Partition& part, const std::vector<int>& device_index,
                                                  const ScheduleChoice& choice) {
  // The micro-batches are as even as micro_batch_sizes makes them: at most
  // two sizes; each segment costs the mean over the step's micro-batches.
  const std::vector<int64_t> sizes = micro_batch_sizes(request_.batch, choice.micro_batch);
  std::map<int64_t, double> weight;
  for (int64_t s : sizes) weight[s] += 1.0 / static_cast<double>(sizes.size());
  const int nd = device_count();
  ScheduleRequest r;
  r.partition = &part;
  r.training = request_.training;
  r.micro_batches = choice.micro_batches;
  r.kind = choice.kind;
  r.contention = request_.contention;
  for (size_t k = 0; k < part.programs.size(); ++k) {
    const int d = device_index[k];
    const PlannerDevice& device = request_.devices[static_cast<size_t>(d)];
    r.contends.push_back(device.host_memory);
    const DeviceProgram& dp = part.programs[k];
    for (int pass = 0; pass < (request_.training ? 2 : 1); ++pass) {
      const std::vector<Instr>& list = pass ? dp.backward : dp.forward;
      std::vector<double> seg_costs;
      for (const Segment& seg : segments_of(list)) {
        double total = 0;
        for (const auto& [size, w] : weight) {
          const Costs& c = costs_at(size);
          double t = 0;
          for (int i = seg.begin; i < seg.end; ++i) {
            const Instr& ins = list[static_cast<size_t>(i)];
            const size_t at = static_cast<size_t>(ins.node * nd + d);
            if (ins.kind == InstrKind::kForward) t += c.fwd[at];
            if (ins.kind == InstrKind::kBackward) t += c.bwd[at];
            if (device.offload && (ins.kind == InstrKind::kForward || ins.kind == InstrKind::kBackward))
              t += analytical_offload_seconds(graph_.node(ins.node).trained_param_bytes(),
                                              ins.kind == InstrKind::kBackward, device.copy_bytes_per_s);
            if (ins.kind == InstrKind::kSumGrads) {
              const int node = program_.tensors[static_cast<size_t>(ins.out.at(0))].node;
              t += analytical_sum_seconds(graph_.node(node).out_shape_for(size).numel(), device.rates);
            }
          }
          total += w * t;
        }
        seg_costs.push_back(total);
      }
      (pass ? r.backward_cost : r.forward_cost).push_back(std::move(seg_costs));
    }
    if (!request_.training) r.backward_cost.emplace_back();
  }
  if (!request_.links.empty()) {
    for (const Edge& e : part.edges) {
      double bytes = 0;
      for (const auto& [size, w] : weight) bytes += w * static_cast<double>(e.bytes(size));
      const int from = device_index[static_cast<size_t>(
          std::find(part.devices.begin(), part.devices.end(), e.producer) - part.devices.begin())];
      double t = 0;
      for (const std::string& consumer : e.consumers) {
        const int to = device_index[static_cast<size_t>(std::find(part.devices.begin(), part.devices.end(), consumer) -
                                                        part.devices.begin())];
        t = std::max(t, request_.links[static_cast<size_t>(from)][static_cast<size_t>(to)].seconds(
                            static_cast<uint64_t>(bytes)));
      }
      r.edge_cost.push_back(t);
    }
  }
  return r;
}

namespace {

// The device over its limit by the most bytes, or none.
OverBudget worst_over(const MemoryPlan& plan, const std::vector<int>& device_index) {
  OverBudget o;
  for (size_t k = 0; k < plan.devices.size(); ++k) {
    const DeviceMemoryPlan& d = plan.devices[k];
    if (d.fits()) continue;
    if (o.device < 0 || d.total() - d.limit > o.over()) o = OverBudget{device_index[k], d.total(), d.limit};
  }
  return o;
}

}  // namespace

double PlacementScorer::fixed_step_seconds(const Partition& part, const std::vector<int>& device_index) const {
  double update = 0, overhead = 0;
  for (size_t k = 0; k < part.programs.size(); ++k) {
    const PlannerDevice& d = request_.devices[static_cast<size_t>(device_index[k])];
    overhead = std::max(overhead, d.step_overhead_s);
    if (!request_.training) continue;
    int64_t params = 0;
    for (const Instr& ins : part.programs[k].forward)
      if (ins.kind == InstrKind::kForward) params += graph_.node(ins.node).param_bytes() / 4;
    update = std::max(update, d.update_seconds_per_param * static_cast<double>(params));
  }
  return update + overhead;
}

bool PlacementScorer::try_choices(const std::vector<ScheduleChoice>& list, const Partition& part,
                                  const std::vector<int>& device_index, bool with_faster, PlacementScore& out) {
  // A choice's step takes at least its busiest device's work.
  struct Candidate {
    ScheduleChoice choice;
    ScheduleRequest request;
    double bound = 0;
  };
  const double fixed = fixed_step_seconds(part, device_index);
  std::vector<Candidate> candidates;
  for (const ScheduleChoice& c : list) {
    Candidate k{c, schedule_request(part, device_index, c), 0.0};
    for (size_t d = 0; d < k.request.forward_cost.size(); ++d) {
      double busy = 0;
      for (double x : k.request.forward_cost[d]) busy += std::max(x, 1e-9);
      for (double x : k.request.backward_cost[d]) busy += std::max(x, 1e-9);
      k.bound = std::max(k.bound, busy * c.micro_batches + fixed);
    }
    candidates.push_back(std::move(k));
  }
  auto simulate = [&](Candidate& k) {
    try {
      k.choice.step_seconds = build_schedule(k.request).makespan + fixed;
    } catch (const Error&) {
      k.choice.step_seconds = std::numeric_limits<double>::infinity();  // cannot finish (never with unlimited rings)
    }
  };
  LeastMemory least;
  if (with_faster) {
    // Every choice simulated; the fastest that fits, and the fastest over a budget before it.
    for (Candidate& k : candidates) simulate(k);
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      return sorts_before(a.choice.step_seconds, b.choice.step_seconds);
    });
    for (const Candidate& k : candidates) {
      if (k.choice.step_seconds == std::numeric_limits<double>::infinity()) break;
      OverBudget over;
      if (memory_fits(part, device_index, k.choice, least, over)) {
        out.fits = true;
        out.best = k.choice;
        return true;
      }
      if (!out.faster) {
        out.faster = k.choice;
        out.faster_over = over;
      }
    }
    return false;
  }
  // By their bound: a choice whose bound reaches the fastest found cannot beat it.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return sorts_before(a.bound, b.bound); });
  for (Candidate& k : candidates) {
    if (out.fits && k.bound >= out.best.step_seconds) break;
    OverBudget over;
    if (!memory_fits(part, device_index, k.choice, least, over)) {
      if (!out.fits && out.faster_over.device < 0) out.faster_over = over;
      continue;
    }
    simulate(k);
    if (k.choice.step_seconds < out.best.step_seconds) {
      out.fits = true;
      out.best = k.choice;
    }
  }
  if (out.fits) out.faster_over = OverBudget{};
  return out.fits;
}

bool PlacementScorer::memory_fits(const Partition& part, const std::vector<int>& device_index, const ScheduleChoice& c,
                                  LeastMemory& least, OverBudget& over) {
  // One buffer set and the rings at their least: what lock-step (and a
  // single micro-batch) plans exactly, and less than any pipeline. It grows
  // with the micro-batch, so one answer settles the larger (or smaller) ones.
  PlanInputs in = plan_inputs(part, device_index, nullptr);
  if (c.micro_batch >= least.over_at) {
    over = least.over;
    return false;
  }
  if (c.micro_batch > least.fits_at) {
    const MemoryPlan plan = plan_memory(in, c.micro_batch);
    if (!plan.fits()) {
      least.over_at = c.micro_batch;
      least.over = over = worst_over(plan, device_index);
      return false;
    }
    least.fits_at = c.micro_batch;
  }
  if (c.kind == PipelineKind::kNone || c.micro_batches == 1) return true;
  // A buffer set per micro-batch and rings as deep as the count: no
  // schedule needs more.
  for (PlanDevice& d : in.devices) d.sets = c.micro_batches;
  in.edge_slots = static_cast<uint32_t>(std::max(request_.min_ring_slots, c.micro_batches));
  if (plan_memory(in, c.micro_batch).fits()) return true;
  // Between the two: what the pipeline plans.
  PipelinePlan pipeline;
  try {
    pipeline = plan_pipeline(graph_, part, request_.training, c.kind, c.micro_batches, request_.min_ring_slots);
  } catch (const Error&) {
    return false;
  }
  const MemoryPlan memory = plan_memory(plan_inputs(part, device_index, &pipeline), c.micro_batch);
  over = worst_over(memory, device_index);
  return memory.fits();
}

PlacementScore PlacementScorer::score(const std::vector<int>& placement, bool with_faster) {
  ++evaluations_;
  apply(placement);
  const Partition part = partition_program(graph_, program_);
  std::vector<int> device_index;
  for (const std::string& name : part.devices)
    for (int d = 0; d < device_count(); ++d)
      if (request_.devices[static_cast<size_t>(d)].name == name) device_index.push_back(d);
  PlacementScore out;
  // The least memory: lock-step (one buffer set), the rings at their least,
  // the smallest micro-batch.
  const MemoryPlan least = plan_memory(plan_inputs(part, device_index, nullptr), least_micro_);
  out.least_need.assign(static_cast<size_t>(device_count()), 0);
  for (size_t k = 0; k < least.devices.size(); ++k) {
    const DeviceMemoryPlan& d = least.devices[k];
    out.least_need[static_cast<size_t>(device_index[k])] = d.total();
    if (!d.fits()) out.least_overflow += d.total() - d.limit;
  }
  if (out.least_overflow > 0) {
    out.faster_over = worst_over(least, device_index);
    return out;
  }
  if (!try_choices(choices_, part, device_index, with_faster, out))
    try_choices(extra_, part, device_index, with_faster, out);
  if (out.fits && out.faster && out.faster->step_seconds >= out.best.step_seconds) out.faster.reset();
  return out;
}

ScoredPlan PlacementScorer::detail(const std::vector<int>& placement, const ScheduleChoice& choice) {
  apply(placement);
  ScoredPlan out;
  out.partition = partition_program(graph_, program_);
  for (const std::string& name : out.partition.devices)
    for (int d = 0; d < device_count(); ++d)
      if (request_.devices[static_cast<size_t>(d)].name == name) out.device_index.push_back(d);
  const ScheduleRequest r = schedule_request(out.partition, out.device_index, choice);
  out.schedule = build_schedule(r);
  const PipelinePlan pipeline = plan_pipeline(graph_, out.partition, request_.training, choice.kind,
                                              choice.micro_batches, request_.min_ring_slots);
  out.memory = plan_memory(plan_inputs(out.partition, out.device_index, &pipeline), choice.micro_batch);
  return out;
}

}  // namespace devmap
