#include "core/plan/pipeline_schedule.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <map>

#include "core/base/error.h"

namespace devmap {

const char* pipeline_kind_name(PipelineKind kind) {
  switch (kind) {
    case PipelineKind::kNone: return "none";
    case PipelineKind::kGpipe: return "gpipe";
    case PipelineKind::k1f1b: return "1f1b";
  }
  return "?";
}

const std::vector<std::string>& pipeline_kind_names() {
  static const std::vector<std::string> kNames = {"1f1b", "gpipe", "none"};
  return kNames;
}

PipelineKind parse_pipeline_kind(const std::string& name) {
  if (name == "none") return PipelineKind::kNone;
  if (name == "gpipe") return PipelineKind::kGpipe;
  if (name == "1f1b") return PipelineKind::k1f1b;
  throw_invalid("unknown pipeline schedule '" + name + "' (known: 1f1b, gpipe, none)");
}

std::vector<Segment> segments_of(const std::vector<Instr>& instrs) {
  std::vector<Segment> out;
  const int n = static_cast<int>(instrs.size());
  for (int i = 0; i < n; ++i) {
    const bool starts = out.empty() || (instrs[static_cast<size_t>(i)].kind == InstrKind::kRecv &&
                                        instrs[static_cast<size_t>(i - 1)].kind != InstrKind::kRecv);
    if (starts) out.push_back(Segment{i, i});
    out.back().end = i + 1;
  }
  return out;
}

namespace {

// One action of the simulation.
struct SimAction {
  int device = 0;
  bool backward = false;
  int segment = 0, micro = 0;
  double cost = 0;
  std::vector<int> deps;          // actions that must finish first
  std::vector<double> dep_delay;  // per dep: how long after it finishes this one may start (a transfer)
  std::vector<int> sends;         // edges it sends on
  bool first_of_micro = false, last_of_micro = false;
  double finish = -1;  // -1: not started
  double start = 0;
  double remaining = 0;  // cost not yet done, at `since` (contention: the rate changes)
  double since = 0;
  double rate = 1;
  bool done = false;
};

class Simulation {
 public:
  explicit Simulation(const ScheduleRequest& r) : r_(r), part_(*r.partition) {
    const int nd = static_cast<int>(part_.devices.size());
    fwd_.resize(static_cast<size_t>(nd));
    bwd_.resize(static_cast<size_t>(nd));
    for (int d = 0; d < nd; ++d) {
      fwd_[static_cast<size_t>(d)] = segments_of(part_.programs[static_cast<size_t>(d)].forward);
      if (r.training) bwd_[static_cast<size_t>(d)] = segments_of(part_.programs[static_cast<size_t>(d)].backward);
    }
    build_nodes();
    stage_limits();
  }

  PipelineSchedule run() {
    const int nd = static_cast<int>(part_.devices.size());
    const size_t ne = part_.edges.size();
    PipelineSchedule out;
    out.kind = r_.kind;
    out.micro_batches = r_.micro_batches;
    out.actions.resize(static_cast<size_t>(nd));
    out.sets.assign(static_cast<size_t>(nd), 0);
    out.edge_slots.assign(ne, 0);
    out.busy.assign(static_cast<size_t>(nd), 0);
    std::vector<int> running(static_cast<size_t>(nd), -1), live(static_cast<size_t>(nd), 0);
    std::vector<bool> last_forward(static_cast<size_t>(nd), true);
    std::vector<std::vector<bool>> set_used(static_cast<size_t>(nd));
    std::vector<std::map<int, int>> set_of(static_cast<size_t>(nd));  // micro -> set
    std::vector<int> held(ne, 0);
    // Slots of edge e held by micro m: released when every consumer is done with m.
    std::map<std::pair<int, int>, int> pending_release;  // (edge, micro) -> consumers yet to finish
    double now = 0;
    size_t done = 0;
    while (done < nodes_.size()) {
      double arrival = std::numeric_limits<double>::infinity();  // the next transfer to land
      for (int d = 0; d < nd; ++d) {
        if (running[static_cast<size_t>(d)] >= 0) continue;
        const int a = pick(d, live[static_cast<size_t>(d)], held, last_forward[static_cast<size_t>(d)], now, arrival);
        if (a < 0) continue;
        SimAction& n = nodes_[static_cast<size_t>(a)];
        n.finish = now + n.cost;
        n.start = now;
        n.remaining = n.cost;
        n.since = now;
        n.rate = 1;
        running[static_cast<size_t>(d)] = a;
        ++next_micro_[static_cast<size_t>(d)][n.backward ? 1 : 0][static_cast<size_t>(n.segment)];
        last_forward[static_cast<size_t>(d)] = !n.backward;
        out.busy[static_cast<size_t>(d)] += n.cost;
        for (int e : n.sends) {
          out.edge_slots[static_cast<size_t>(e)] =
              std::max(out.edge_slots[static_cast<size_t>(e)], ++held[static_cast<size_t>(e)]);
          pending_release[{e, n.micro}] = static_cast<int>(part_.edges[static_cast<size_t>(e)].consumers.size());
        }
        auto& used = set_used[static_cast<size_t>(d)];
        if (n.first_of_micro) {
          ++live[static_cast<size_t>(d)];
          size_t s = 0;
          while (s < used.size() && used[s]) ++s;
          if (s == used.size()) used.push_back(false);
          used[s] = true;
          set_of[static_cast<size_t>(d)][n.micro] = static_cast<int>(s);
          out.sets[static_cast<size_t>(d)] = std::max(out.sets[static_cast<size_t>(d)], static_cast<int>(used.size()));
        }
        PipelineAction act;
        act.backward = n.backward;
        act.micro = n.micro;
        act.segment = n.segment;
        act.set = set_of[static_cast<size_t>(d)].at(n.micro);
        act.last_of_micro = n.last_of_micro;
        out.actions[static_cast<size_t>(d)].push_back(act);
      }
      if (r_.contention > 0) apply_contention(running, now);
      double next = std::numeric_limits<double>::infinity();
      for (int a : running)
        if (a >= 0) next = std::min(next, nodes_[static_cast<size_t>(a)].finish);
      next = std::min(next, arrival);
      if (next == std::numeric_limits<double>::infinity()) deadlock(held);
      now = next;
      for (int d = 0; d < nd; ++d) {
        const int a = running[static_cast<size_t>(d)];
        if (a < 0 || nodes_[static_cast<size_t>(a)].finish > now) continue;
        SimAction& n = nodes_[static_cast<size_t>(a)];
        n.done = true;
        ++done;
        if (r_.contention > 0) out.busy[static_cast<size_t>(d)] += (n.finish - n.start) - n.cost;  // the slowdown
        --micro_left_[static_cast<size_t>(n.micro)];
        if (!n.backward) --forwards_left_[static_cast<size_t>(d)];
        running[static_cast<size_t>(d)] = -1;
        if (!n.last_of_micro) continue;
        --live[static_cast<size_t>(d)];
        set_used[static_cast<size_t>(d)][static_cast<size_t>(set_of[static_cast<size_t>(d)].at(n.micro))] = false;
        // Every slot this device received for the micro-batch goes back.
        for (int e : recv_edges_[static_cast<size_t>(d)]) {
          auto it = pending_release.find({e, n.micro});
          if (it == pending_release.end()) continue;
          if (--it->second == 0) {
            --held[static_cast<size_t>(e)];
            pending_release.erase(it);
          }
        }
      }
    }
    out.makespan = now;
    for (int& s : out.edge_slots) s = std::max(s, 1);
    return out;
  }

 private:
  // Re-rates the running actions of contending devices for how many of
  // them run now; an action whose rate changes finishes later (or sooner)
  // by the work it has left.
  void apply_contention(const std::vector<int>& running, double now) {
    int k = 0;
    for (size_t d = 0; d < running.size(); ++d)
      if (running[d] >= 0 && contends(static_cast<int>(d))) ++k;
    const double rate = 1.0 / (1.0 + r_.contention * static_cast<double>(std::max(k - 1, 0)));
    for (size_t d = 0; d < running.size(); ++d) {
      if (running[d] < 0 || !contends(static_cast<int>(d))) continue;
      SimAction& n = nodes_[static_cast<size_t>(running[d])];
      if (n.rate == rate) continue;
      n.remaining = std::max(0.0, n.remaining - (now - n.since) * n.rate);
      n.since = now;
      n.rate = rate;
      n.finish = now + n.remaining / rate;
    }
  }
  bool contends(int d) const {
    return static_cast<size_t>(d) < r_.contends.size() && r_.contends[static_cast<size_t>(d)];
  }

  int index(int d, bool backward, int s, int m) const {
    return base_[static_cast<size_t>(d)][backward ? 1 : 0] + s * r_.micro_batches + m;
  }

  void build_nodes() {
    const int nd = static_cast<int>(part_.devices.size());
    const int mb = r_.micro_batches;
    base_.resize(static_cast<size_t>(nd));
    recv_edges_.resize(static_cast<size_t>(nd));
    // Where each edge is sent: (device, backward, segment).
    struct Site {
      int device;
      bool backward;
      int segment;
    };
    std::vector<Site> sent_at(part_.edges.size(), Site{-1, false, -1});
    for (int d = 0; d < nd; ++d) {
      const DeviceProgram& dp = part_.programs[static_cast<size_t>(d)];
      for (int pass = 0; pass < 2; ++pass) {
        const std::vector<Instr>& list = pass ? dp.backward : dp.forward;
        const std::vector<Segment>& segs = pass ? bwd_[static_cast<size_t>(d)] : fwd_[static_cast<size_t>(d)];
        for (size_t s = 0; s < segs.size(); ++s)
          for (int i = segs[s].begin; i < segs[s].end; ++i) {
            const Instr& ins = list[static_cast<size_t>(i)];
            if (ins.kind == InstrKind::kSend)
              sent_at[static_cast<size_t>(ins.node)] = Site{d, pass == 1, static_cast<int>(s)};
            if (ins.kind == InstrKind::kRecv) recv_edges_[static_cast<size_t>(d)].push_back(ins.node);
          }
      }
    }
    // Nodes, device by device: forward segments, then backward, each for every micro-batch.
    for (int d = 0; d < nd; ++d) {
      const auto& f = fwd_[static_cast<size_t>(d)];
      const auto& b = bwd_[static_cast<size_t>(d)];
      base_[static_cast<size_t>(d)] = {static_cast<int>(nodes_.size()),
                                       static_cast<int>(nodes_.size() + f.size() * static_cast<size_t>(mb))};
      for (int pass = 0; pass < 2; ++pass) {
        const auto& segs = pass ? b : f;
        const auto& costs =
            pass ? r_.backward_cost.at(static_cast<size_t>(d)) : r_.forward_cost.at(static_cast<size_t>(d));
        for (size_t s = 0; s < segs.size(); ++s)
          for (int m = 0; m < mb; ++m) {
            SimAction n;
            n.device = d;
            n.backward = pass == 1;
            n.segment = static_cast<int>(s);
            n.micro = m;
            n.cost = std::max(costs.at(s), 1e-9);
            n.first_of_micro = pass == 0 && s == 0;
            n.last_of_micro = b.empty() ? (pass == 0 && s + 1 == f.size()) : (pass == 1 && s + 1 == b.size());
            nodes_.push_back(n);
          }
      }
    }
    next_micro_.resize(static_cast<size_t>(nd));
    for (int d = 0; d < nd; ++d) {
      next_micro_[static_cast<size_t>(d)][0].assign(fwd_[static_cast<size_t>(d)].size(), 0);
      next_micro_[static_cast<size_t>(d)][1].assign(bwd_[static_cast<size_t>(d)].size(), 0);
    }
    micro_left_.assign(static_cast<size_t>(mb), 0);
    forwards_left_.assign(static_cast<size_t>(nd), 0);
    for (const SimAction& n : nodes_) {
      ++micro_left_[static_cast<size_t>(n.micro)];
      if (!n.backward) ++forwards_left_[static_cast<size_t>(n.device)];
    }
    // Dependencies.
    for (int d = 0; d < nd; ++d) {
      const DeviceProgram& dp = part_.programs[static_cast<size_t>(d)];
      const auto& f = fwd_[static_cast<size_t>(d)];
      const auto& b = bwd_[static_cast<size_t>(d)];
      for (int pass = 0; pass < 2; ++pass) {
        const std::vector<Instr>& list = pass ? dp.backward : dp.forward;
        const auto& segs = pass ? b : f;
        for (size_t s = 0; s < segs.size(); ++s)
          for (int m = 0; m < mb; ++m) {
            SimAction& n = nodes_[static_cast<size_t>(index(d, pass == 1, static_cast<int>(s), m))];
            if (m > 0) n.deps.push_back(index(d, pass == 1, static_cast<int>(s), m - 1));
            if (s > 0) n.deps.push_back(index(d, pass == 1, static_cast<int>(s) - 1, m));
            if (pass == 1 && s == 0) n.deps.push_back(index(d, false, static_cast<int>(f.size()) - 1, m));
            for (int i = segs[s].begin; i < segs[s].end; ++i) {
              const Instr& ins = list[static_cast<size_t>(i)];
              if (ins.kind == InstrKind::kSend) n.sends.push_back(ins.node);
              if (ins.kind != InstrKind::kRecv) continue;
              const Site& site = sent_at[static_cast<size_t>(ins.node)];
              assert(site.device >= 0);
              n.deps.push_back(index(site.device, site.backward, site.segment, m));
              n.dep_delay.resize(n.deps.size() - 1, 0.0);
              n.dep_delay.push_back(r_.edge_cost.empty() ? 0.0 : r_.edge_cost.at(static_cast<size_t>(ins.node)));
            }
          }
      }
    }
  }

  // 1f1b: a device admits a new micro-batch while it holds fewer than
  // p - i, i being the position of its first stage among all p stages in
  // dependency order.
  void stage_limits() {
    const int nd = static_cast<int>(part_.devices.size());
    // Stages (forward segments of micro-batch 0) in the order the
    // lock-step simulation would finish them: a topological order.
    std::vector<std::pair<int, int>> stages;  // (device, segment)
    std::vector<bool> placed(nodes_.size(), false);
    for (bool again = true; again;) {
      again = false;
      for (int d = 0; d < nd; ++d)
        for (size_t s = 0; s < fwd_[static_cast<size_t>(d)].size(); ++s) {
          const int a = index(d, false, static_cast<int>(s), 0);
          if (placed[static_cast<size_t>(a)]) continue;
          bool ready = true;
          for (int dep : nodes_[static_cast<size_t>(a)].deps) ready = ready && placed[static_cast<size_t>(dep)];
          if (!ready) continue;
          placed[static_cast<size_t>(a)] = true;
          stages.emplace_back(d, static_cast<int>(s));
          again = true;
        }
    }
    const int p = static_cast<int>(stages.size());
    limit_.assign(static_cast<size_t>(nd), 1);
    for (int i = p - 1; i >= 0; --i) limit_[static_cast<size_t>(stages[static_cast<size_t>(i)].first)] = p - i;
  }

  bool ready(const SimAction& n) const {
    for (int dep : n.deps)
      if (!nodes_[static_cast<size_t>(dep)].done) return false;
    return true;
  }

  // When every dependency has finished and its transfer has landed
  // (infinity while one has not finished).
  double ready_at(const SimAction& n) const {
    double t = 0;
    for (size_t k = 0; k < n.deps.size(); ++k) {
      const SimAction& dep = nodes_[static_cast<size_t>(n.deps[k])];
      if (!dep.done) return std::numeric_limits<double>::infinity();
      t = std::max(t, dep.finish + (k < n.dep_delay.size() ? n.dep_delay[k] : 0.0));
    }
    return t;
  }

  bool admissible(const SimAction& n, int live) const {
    switch (r_.kind) {
      case PipelineKind::kNone:
        // Micro-batch m waits until m-1 has finished everywhere.
        return n.micro == 0 || micro_left_[static_cast<size_t>(n.micro - 1)] == 0;
      case PipelineKind::kGpipe: return !n.backward || forwards_left_[static_cast<size_t>(n.device)] == 0;
      case PipelineKind::k1f1b: return !n.first_of_micro || live < limit_[static_cast<size_t>(n.device)];
    }
    return true;
  }

  bool slots_free(const SimAction& n, const std::vector<int>& held) const {
    if (r_.ring_slots.empty()) return true;
    for (int e : n.sends)
      if (held[static_cast<size_t>(e)] >= r_.ring_slots.at(static_cast<size_t>(e))) return false;
    return true;
  }

  // The device's next action, or -1.
  // 1f1b alternates once it is full: after a forward, the oldest backward
  // that is ready; after a backward, a forward if one may start. An action
  // whose inputs are still in transit lowers `arrival` to when they land.
  int pick(int d, int live, const std::vector<int>& held, bool last_was_forward, double now, double& arrival) const {
    int best = -1;
    auto better = [&](const SimAction& a, const SimAction& b) {
      const bool backward_first = r_.kind == PipelineKind::k1f1b && last_was_forward;
      if (a.backward != b.backward && r_.kind != PipelineKind::kNone) return backward_first ? a.backward : b.backward;
      if (a.micro != b.micro) return a.micro < b.micro;
      if (a.backward != b.backward) return b.backward;
      return a.segment < b.segment;
    };
    // Each segment runs its micro-batches in order (a dependency), so the
    // candidates are every segment's first action not yet started.
    for (int pass = 0; pass < 2; ++pass) {
      const size_t segments = (pass ? bwd_ : fwd_)[static_cast<size_t>(d)].size();
      for (size_t seg = 0; seg < segments; ++seg) {
        const int m = next_micro_[static_cast<size_t>(d)][static_cast<size_t>(pass)][seg];
        if (m >= r_.micro_batches) continue;
        const int i = index(d, pass == 1, static_cast<int>(seg), m);
        const SimAction& n = nodes_[static_cast<size_t>(i)];
        const double at = ready_at(n);
        if (at > now) {
          if (at < std::numeric_limits<double>::infinity()) arrival = std::min(arrival, at);
          continue;
        }
        if (!admissible(n, live) || !slots_free(n, held)) continue;
        if (best < 0 || better(n, nodes_[static_cast<size_t>(best)])) best = i;
      }
    }
    return best;
  }

  [[noreturn]] void deadlock(const std::vector<int>& held) const {
    std::string why;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const SimAction& n = nodes_[i];
      if (n.finish >= 0) continue;
      if (!ready(n)) continue;
      for (int e : n.sends)
        if (!r_.ring_slots.empty() && held[static_cast<size_t>(e)] >= r_.ring_slots.at(static_cast<size_t>(e)))
          why += (why.empty() ? "" : "; ") + part_.devices[static_cast<size_t>(n.device)] +
                 " waits for a free slot of " + part_.edges[static_cast<size_t>(e)].name + " (its ring has " +
                 std::to_string(r_.ring_slots.at(static_cast<size_t>(e))) + ")";
    }
    throw_invalid(std::string("pipeline schedule ") + pipeline_kind_name(r_.kind) + " with " +
                  std::to_string(r_.micro_batches) + " micro-batches would deadlock: " +
                  (why.empty() ? "no device can go on" : why) + "; use more slots or fewer micro-batches");
  }

  const ScheduleRequest& r_;
  const Partition& part_;
  std::vector<std::vector<Segment>> fwd_, bwd_;
  std::vector<SimAction> nodes_;
  std::vector<std::array<int, 2>> base_;
  std::vector<std::vector<int>> recv_edges_;  // per device
  std::vector<int> limit_;
  // Per device, pass (0 forward, 1 backward) and segment: the first
  // micro-batch not yet started.
  std::vector<std::array<std::vector<int>, 2>> next_micro_;
  std::vector<int> micro_left_;     // per micro-batch: actions not yet done (none: lock-step)
  std::vector<int> forwards_left_;  // per device: forward actions not yet done (gpipe)
};

}  // namespace

PipelineSchedule build_schedule(const ScheduleRequest& request) {
  assert(request.partition && request.micro_batches >= 1);
  return Simulation(request).run();
}

void set_flops_costs(const Graph& graph, ScheduleRequest& request) {
  const Partition& part = *request.partition;
  constexpr double kSegmentOverhead = 1e4;  // FLOPs' worth of a segment's fixed cost
  request.forward_cost.clear();
  request.backward_cost.clear();
  for (const DeviceProgram& dp : part.programs) {
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<Instr>& list = pass ? dp.backward : dp.forward;
      std::vector<double> costs;
      if (pass == 0 || request.training)
        for (const Segment& s : segments_of(list)) {
          double c = kSegmentOverhead;
          for (int i = s.begin; i < s.end; ++i) {
            const Instr& ins = list[static_cast<size_t>(i)];
            if (ins.kind == InstrKind::kForward) c += graph.node(ins.node).forward_flops(1);
            if (ins.kind == InstrKind::kBackward) c += graph.node(ins.node).backward_flops(1);
          }
          costs.push_back(c);
        }
      (pass ? request.backward_cost : request.forward_cost).push_back(std::move(costs));
    }
  }
}

int PipelinePlan::sets_of(const Partition& partition, const std::string& device) const {
  for (size_t d = 0; d < partition.devices.size(); ++d)
    if (partition.devices[d] == device) return sets.at(d);
  return 1;
}

PipelinePlan plan_pipeline(const Graph& graph, const Partition& partition, bool training, PipelineKind kind,
                           int micro_batches, int min_slots) {
  assert(micro_batches >= 1);
  PipelinePlan plan;
  plan.kind = kind;
  plan.micro_batches = micro_batches;
  plan.sets.assign(partition.devices.size(), 1);
  plan.edge_slots.assign(partition.edges.size(), min_slots);
  auto request = [&](bool backward) {
    ScheduleRequest r;
    r.partition = &partition;
    r.training = backward;
    r.kind = kind;
    set_flops_costs(graph, r);
    return r;
  };
  // Training plans also hold the forward-only schedules of evaluation.
  std::vector<bool> passes = {false};
  if (training) passes.insert(passes.begin(), true);
  for (bool backward : passes) {
    ScheduleRequest r = request(backward);
    for (int c = 1; c <= micro_batches; ++c) {
      r.micro_batches = c;
      PipelineSchedule s = build_schedule(r);
      for (size_t d = 0; d < s.sets.size(); ++d) plan.sets[d] = std::max(plan.sets[d], s.sets[d]);
      for (size_t e = 0; e < s.edge_slots.size(); ++e)
        plan.edge_slots[e] = std::max(plan.edge_slots[e], s.edge_slots[e]);
      (backward ? plan.by_count : plan.forward_by_count).push_back(std::move(s));
    }
  }
  // The rings as they will be: every schedule must finish with them.
  for (bool backward : passes) {
    ScheduleRequest r = request(backward);
    r.ring_slots = plan.edge_slots;
    for (int c = 1; c <= micro_batches; ++c) {
      r.micro_batches = c;
      build_schedule(r);
    }
  }
  return plan;
}

std::string describe_schedule(const PipelineSchedule& schedule, const Partition& partition) {
  std::string out;
  for (size_t d = 0; d < schedule.actions.size(); ++d) {
    out += "  " + partition.devices[d] + ":";
    int segments = 0;
    for (const PipelineAction& a : schedule.actions[d]) segments = std::max(segments, a.segment + 1);
    for (const PipelineAction& a : schedule.actions[d]) {
      out += std::string(" ") + (a.backward ? "B" : "F") + std::to_string(a.micro);
      if (segments > 1) out += "." + std::to_string(a.segment);
    }
    out += "\n";
  }
  return out;
}

}  // namespace devmap
