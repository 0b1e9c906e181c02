#include "core/placement/search.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

#include "core/base/total_order.h"
#include "core/plan/device_budget.h"

namespace devmap {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The chain search stops (not exact) after trying this many stages.
constexpr int64_t kMaxStagesVisited = 20'000'000;

// Among placements that do not fit: those whose least memory fits come
// first (only the listed choices failed), then the fewest bytes over.
std::pair<int, uint64_t> overflow_key(const PlacementScore& s) {
  if (s.least_overflow > 0) return {1, s.least_overflow};
  return {0, s.faster_over.over()};
}

// The best placement of the log.
std::vector<int> best_of(const ScoreLog& log) {
  const std::vector<int>* best = nullptr;
  const PlacementScore* score = nullptr;
  for (const auto& [placement, s] : log.all())
    if (!score || better_score(s, *score)) {
      best = &placement;
      score = &s;
    }
  return best ? *best : std::vector<int>{};
}

// A step's micro-batch sizes as weights (at most two sizes).
std::vector<std::pair<int64_t, double>> size_weights(int64_t batch, int64_t micro) {
  const std::vector<int64_t> sizes = micro_batch_sizes(batch, micro);
  std::vector<std::pair<int64_t, double>> out;
  for (int64_t s : sizes) {
    if (out.empty() || out.back().first != s) out.emplace_back(s, 0.0);
    out.back().second += 1.0 / static_cast<double>(sizes.size());
  }
  return out;
}

// Per device, the cost (forward + backward, mean over a step's
// micro-batches) of each op of `order`, as prefix sums.
struct StageCosts {
  int count = 1;                            // micro-batches of the step
  std::vector<std::vector<double>> prefix;  // [device][k]: ops order[0..k)
  std::vector<double> activation_bytes;     // [k]: order[k]'s output, mean micro-batch
  std::vector<uint64_t> floor;              // [k]: prefix sums of the ops' floor bytes at this micro-batch
  double stage(int d, int i, int j) const {
    return prefix[static_cast<size_t>(d)][static_cast<size_t>(j)] -
           prefix[static_cast<size_t>(d)][static_cast<size_t>(i)];
  }
};

StageCosts stage_costs(PlacementScorer& scorer, const std::vector<int>& order, const ScheduleChoice& choice) {
  const PlacementRequest& r = scorer.request();
  const int nd = scorer.device_count();
  StageCosts c;
  c.count = choice.micro_batches;
  const auto weights = size_weights(r.batch, choice.micro_batch);
  c.prefix.assign(static_cast<size_t>(nd), std::vector<double>(order.size() + 1, 0.0));
  for (int d = 0; d < nd; ++d)
    for (size_t k = 0; k < order.size(); ++k) {
      double t = 0;
      for (const auto& [size, w] : weights) {
        t += w * scorer.op_seconds(order[k], d, size, false);
        if (r.training) t += w * scorer.op_seconds(order[k], d, size, true);
      }
      c.prefix[static_cast<size_t>(d)][k + 1] = c.prefix[static_cast<size_t>(d)][k] + t;
    }
  const double mean = static_cast<double>(r.batch) / static_cast<double>(c.count);
  c.floor.assign(order.size() + 1, 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const Node& node = r.graph->node(order[k]);
    c.activation_bytes.push_back(static_cast<double>(node.activation_bytes(1)) * mean);
    // The floor at this micro-batch: parameter state, and the output unless read back.
    const uint64_t at_least = scorer.op_floor_bytes(order[k]) - scorer.op_state_bytes(order[k]);
    const uint64_t output =
        at_least ? charged_bytes(static_cast<uint64_t>(node.activation_bytes(choice.micro_batch))) : 0;
    c.floor[k + 1] = c.floor[k] + scorer.op_state_bytes(order[k]) + output;
  }
  return c;
}

// Which devices a stage [i, j) of `order` may have, given the pins.
class StageRules {
 public:
  StageRules(const PlacementScorer& scorer, const std::vector<int>& order) : scorer_(scorer) {
    const int n = static_cast<int>(order.size());
    const int nd = scorer.device_count();
    pin_.resize(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) pin_[static_cast<size_t>(k)] = scorer.pinned_device(order[static_cast<size_t>(k)]);
    last_pin_.assign(static_cast<size_t>(nd), -1);
    for (int k = 0; k < n; ++k)
      if (pin_[static_cast<size_t>(k)] >= 0) last_pin_[static_cast<size_t>(pin_[static_cast<size_t>(k)])] = k;
    floor_.assign(order.size() + 1, 0);
    for (size_t k = 0; k < order.size(); ++k) floor_[k + 1] = floor_[k] + scorer.op_floor_bytes(order[k]);
  }
  // The ends j of a stage from i on d: [lo, hi]; lo > hi when none.
  std::pair<int, int> ends(int d, int i) const {
    const int n = static_cast<int>(pin_.size());
    int hi = n;
    for (int k = i; k < n; ++k)
      if (pin_[static_cast<size_t>(k)] >= 0 && pin_[static_cast<size_t>(k)] != d) {
        hi = k;
        break;
      }
    const int lo = std::max(i + 1, last_pin_[static_cast<size_t>(d)] + 1);
    return {lo, hi};
  }
  // Whether a stage [i, j) on d surely passes d's limit (its ops' floor bytes do).
  bool too_big(int d, int i, int j) const {
    const uint64_t limit = scorer_.request().devices[static_cast<size_t>(d)].memory_limit;
    return limit && floor_[static_cast<size_t>(j)] - floor_[static_cast<size_t>(i)] > limit;
  }

 private:
  const PlacementScorer& scorer_;
  std::vector<int> pin_, last_pin_;
  std::vector<uint64_t> floor_;  // prefix sums of op_floor_bytes
};

// The PipeDream-style dynamic program: consecutive stages of `order`, one
// device each (never twice), minimising the busiest stage's cost; stages
// whose parameter state passes their device's limit are not formed. The
// device of each op of `order`, or empty when the pins allow none.
std::vector<int> bottleneck_stages(const PlacementScorer& scorer, const std::vector<int>& order,
                                   const StageCosts& costs) {
  const int n = static_cast<int>(order.size());
  const int nd = scorer.device_count();
  if (n == 0 || nd > kChainSearchMaxDevices) return {};
  const StageRules rules(scorer, order);
  const size_t masks = size_t{1} << nd;
  // best[i][mask]: the least busiest stage placing order[i..n) on devices not in mask.
  std::vector<std::vector<double>> best(static_cast<size_t>(n) + 1, std::vector<double>(masks, kInf));
  std::vector<std::vector<std::pair<int, int>>> pick(static_cast<size_t>(n) + 1,
                                                     std::vector<std::pair<int, int>>(masks, {-1, -1}));
  for (size_t m = 0; m < masks; ++m) best[static_cast<size_t>(n)][m] = 0;
  for (int i = n - 1; i >= 0; --i)
    for (size_t mask = 0; mask < masks; ++mask)
      for (int d = 0; d < nd; ++d) {
        if (mask & (size_t{1} << d)) continue;
        const auto [lo, hi] = rules.ends(d, i);
        for (int j = i + 1; j <= hi; ++j) {
          if (rules.too_big(d, i, j)) break;
          if (j < lo) continue;
          const double v = std::max(costs.stage(d, i, j), best[static_cast<size_t>(j)][mask | (size_t{1} << d)]);
          if (v < best[static_cast<size_t>(i)][mask]) {
            best[static_cast<size_t>(i)][mask] = v;
            pick[static_cast<size_t>(i)][mask] = {d, j};
          }
        }
      }
  if (best[0][0] == kInf) return {};
  std::vector<int> devices(static_cast<size_t>(n), -1);
  size_t mask = 0;
  for (int i = 0; i < n;) {
    const auto [d, j] = pick[static_cast<size_t>(i)][mask];
    for (int k = i; k < j; ++k) devices[static_cast<size_t>(k)] = d;
    mask |= size_t{1} << d;
    i = j;
  }
  return devices;
}

// A complete placement from the devices of `order`'s ops.
std::vector<int> placement_from(const PlacementScorer& scorer, const std::vector<int>& order,
                                const std::vector<int>& devices) {
  std::vector<int> p(static_cast<size_t>(scorer.request().graph->size()), -1);
  for (size_t k = 0; k < order.size(); ++k) p[static_cast<size_t>(order[k])] = devices[k];
  return scorer.complete(std::move(p));
}

// Every free op on device d (pinned ops stay where they are).
std::vector<int> all_on(const PlacementScorer& scorer, int d) {
  std::vector<int> p(static_cast<size_t>(scorer.request().graph->size()), -1);
  for (int op : scorer.compute_ops()) p[static_cast<size_t>(op)] = d;
  return scorer.complete(std::move(p));
}

// Branch and bound over contiguous placements (see the header).
class ChainSearch {
 public:
  ChainSearch(PlacementScorer& scorer, ScoreLog& log, const std::vector<int>& chain)
      : scorer_(scorer), log_(log), chain_(chain), rules_(scorer, chain) {
    std::set<std::pair<int64_t, int>> seen;
    for (const auto* list : {&scorer.choices(), &scorer.extra_choices()})
      for (const ScheduleChoice& c : *list)
        if (seen.insert({c.micro_batch, c.micro_batches}).second) costs_.push_back(stage_costs(scorer, chain, c));
    budget_ = scorer.evaluations() + std::max(scorer.request().max_evaluations, 1);
  }

  SearchResult run() {
    const int nd = scorer_.device_count();
    // First incumbents: one device, and the bottleneck program.
    for (int d = 0; d < nd; ++d) {
      const auto [lo, hi] = rules_.ends(d, 0);
      if (hi == static_cast<int>(chain_.size()) && lo <= hi) offer(all_on(scorer_, d));
    }
    const std::vector<int> dp = bottleneck_stages(scorer_, chain_, costs_.front());
    if (!dp.empty()) offer(placement_from(scorer_, chain_, dp));
    devices_.assign(chain_.size(), -1);
    std::vector<double> prefix(costs_.size(), 0.0), most(costs_.size(), 0.0);
    dfs(0, -1, 0, prefix, most);
    SearchResult r;
    r.method = "chain";
    r.exact = !cut_short_;
    r.best = best_.empty() ? best_of(log_) : best_;
    return r;
  }

 private:
  void offer(const std::vector<int>& placement) {
    const PlacementScore& s = log_.score(scorer_, placement);
    if (s.fits && s.best.step_seconds < incumbent_) {
      incumbent_ = s.best.step_seconds;
      best_ = placement;
    }
  }

  void dfs(int i, int prev, size_t mask, const std::vector<double>& prefix, const std::vector<double>& most) {
    const int n = static_cast<int>(chain_.size());
    const int nd = scorer_.device_count();
    const size_t q_count = costs_.size();
    std::vector<double> start(q_count), next_prefix(q_count), next_most(q_count);
    for (int d = 0; d < nd; ++d) {
      if (mask & (size_t{1} << d)) continue;
      const bool last_device = (mask | (size_t{1} << d)) == (size_t{1} << nd) - 1;
      const auto [lo, hi] = rules_.ends(d, i);
      if (lo > hi) continue;
      for (size_t q = 0; q < q_count; ++q) {
        start[q] = prefix[q];
        if (prev >= 0 && !scorer_.request().links.empty())
          start[q] += scorer_.request().links[static_cast<size_t>(prev)][static_cast<size_t>(d)].seconds(
              static_cast<uint64_t>(costs_[q].activation_bytes[static_cast<size_t>(i - 1)]));
      }
      // The last free device takes the rest of the chain.
      for (int j = last_device ? n : i + 1; j <= hi; ++j) {
        if (rules_.too_big(d, i, j)) break;
        if (++visited_ > kMaxStagesVisited) {
          cut_short_ = true;
          return;
        }
        double bound = kInf;
        const uint64_t limit = scorer_.request().devices[static_cast<size_t>(d)].memory_limit;
        for (size_t q = 0; q < q_count; ++q) {
          const double stage = costs_[q].stage(d, i, j);
          const StageCosts& c = costs_[q];
          const bool over = limit && c.floor[static_cast<size_t>(j)] - c.floor[static_cast<size_t>(i)] > limit;
          next_most[q] = over ? kInf : std::max(most[q], start[q] + costs_[q].count * stage);
          next_prefix[q] = start[q] + stage;
          bound = std::min(bound, next_most[q]);
        }
        if (bound >= incumbent_) break;  // grows with j
        if (j < lo) continue;
        for (int k = i; k < j; ++k) devices_[static_cast<size_t>(k)] = d;
        if (j == n) {
          if (scorer_.out_of_budget(budget_)) {
            cut_short_ = true;
            return;
          }
          offer(placement_from(scorer_, chain_, devices_));
        } else {
          dfs(j, d, mask | (size_t{1} << d), next_prefix, next_most);
        }
        if (cut_short_) return;
      }
    }
  }

  PlacementScorer& scorer_;
  ScoreLog& log_;
  const std::vector<int>& chain_;
  StageRules rules_;
  std::vector<StageCosts> costs_;  // one per (micro-batch, count) the scorer may choose
  std::vector<int> devices_;       // per chain op, the DFS's current stage devices
  double incumbent_ = kInf;
  std::vector<int> best_;
  int budget_ = 0;
  int64_t visited_ = 0;  // stages tried
  bool cut_short_ = false;
};

// A list schedule in the style of HEFT (see the header).
std::vector<int> list_schedule(PlacementScorer& scorer) {
  const PlacementRequest& r = scorer.request();
  const Graph& g = *r.graph;
  const int nd = scorer.device_count();
  const std::vector<int>& ops = scorer.compute_ops();
  const int64_t micro = scorer.choices().front().micro_batch;
  std::vector<int> pos(static_cast<size_t>(g.size()), -1);
  for (size_t k = 0; k < ops.size(); ++k) pos[static_cast<size_t>(ops[k])] = static_cast<int>(k);
  auto work = [&](int op, int d) {
    return scorer.op_seconds(op, d, micro, false) + (r.training ? scorer.op_seconds(op, d, micro, true) : 0.0);
  };
  auto transfer = [&](int op, int from, int to) {
    if (from == to || r.links.empty()) return 0.0;
    return r.links[static_cast<size_t>(from)][static_cast<size_t>(to)].seconds(
        static_cast<uint64_t>(g.node(op).activation_bytes(micro)));
  };
  std::vector<std::vector<int>> consumers(ops.size());
  for (size_t k = 0; k < ops.size(); ++k)
    for (int in : g.node(ops[k]).inputs)
      if (pos[static_cast<size_t>(in)] >= 0)
        consumers[static_cast<size_t>(pos[static_cast<size_t>(in)])].push_back(static_cast<int>(k));
  std::vector<double> rank(ops.size(), 0.0);
  for (size_t k = ops.size(); k-- > 0;) {
    double mean = 0, comm = 0;
    for (int d = 0; d < nd; ++d) mean += work(ops[k], d) / nd;
    for (int a = 0; a < nd; ++a)
      for (int b = 0; b < nd; ++b) comm += transfer(ops[k], a, b) / (nd * nd);
    double tail = 0;
    for (int c : consumers[k]) tail = std::max(tail, comm + rank[static_cast<size_t>(c)]);
    rank[k] = mean + tail;
  }
  std::vector<int> order(ops.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return sorts_before(rank[static_cast<size_t>(b)], rank[static_cast<size_t>(a)]);
  });
  std::vector<double> avail(static_cast<size_t>(nd), 0.0), finish(ops.size(), 0.0);
  std::vector<uint64_t> state(static_cast<size_t>(nd), 0);
  std::vector<int> device(ops.size(), -1);
  for (int k : order) {
    const int op = ops[static_cast<size_t>(k)];
    std::vector<int> allowed;
    if (scorer.pinned_device(op) >= 0) {
      allowed.push_back(scorer.pinned_device(op));
    } else {
      for (int d = 0; d < nd; ++d) {
        const uint64_t limit = r.devices[static_cast<size_t>(d)].memory_limit;
        if (!limit || state[static_cast<size_t>(d)] + scorer.op_state_bytes(op) <= limit) allowed.push_back(d);
      }
      if (allowed.empty())
        for (int d = 0; d < nd; ++d) allowed.push_back(d);
    }
    int best = -1;
    double best_finish = kInf;
    for (int d : allowed) {
      double start = avail[static_cast<size_t>(d)];
      for (int in : g.node(op).inputs) {
        const int p = pos[static_cast<size_t>(in)];
        if (p < 0) continue;
        start = std::max(start, finish[static_cast<size_t>(p)] + transfer(in, device[static_cast<size_t>(p)], d));
      }
      if (start + work(op, d) < best_finish) {
        best_finish = start + work(op, d);
        best = d;
      }
    }
    device[static_cast<size_t>(k)] = best;
    finish[static_cast<size_t>(k)] = best_finish;
    avail[static_cast<size_t>(best)] = best_finish;
    state[static_cast<size_t>(best)] += scorer.op_state_bytes(op);
  }
  return placement_from(scorer, ops, device);
}

// Ops worth moving: every free op of a small graph, else those next to a cut.
std::vector<int> movable_ops(const PlacementScorer& scorer, const std::vector<int>& placement) {
  const std::vector<int>& free = scorer.free_ops();
  constexpr size_t kSmall = 64;
  if (free.size() <= kSmall) return free;
  const Graph& g = *scorer.request().graph;
  std::vector<bool> boundary(static_cast<size_t>(g.size()), false);
  for (int op : scorer.compute_ops())
    for (int in : g.node(op).inputs) {
      const int a = placement[static_cast<size_t>(in)], b = placement[static_cast<size_t>(op)];
      if (a >= 0 && a != b) boundary[static_cast<size_t>(in)] = boundary[static_cast<size_t>(op)] = true;
    }
  std::vector<int> out;
  for (int op : free)
    if (boundary[static_cast<size_t>(op)]) out.push_back(op);
  return out;
}

// Moves one op at a time while a move improves the score (first improvement).
std::vector<int> local_search(PlacementScorer& scorer, ScoreLog& log, std::vector<int> current, int budget) {
  const PlacementScore* score = &log.score(scorer, current);
  for (bool improved = true; improved;) {
    improved = false;
    for (int op : movable_ops(scorer, current)) {
      for (int d = 0; d < scorer.device_count(); ++d) {
        if (d == current[static_cast<size_t>(op)]) continue;
        if (scorer.out_of_budget(budget)) return current;
        std::vector<int> candidate = current;
        candidate[static_cast<size_t>(op)] = d;
        candidate = scorer.complete(std::move(candidate));
        const PlacementScore& s = log.score(scorer, candidate);
        if (better_score(s, *score)) {
          current = std::move(candidate);
          score = &s;
          improved = true;
          break;
        }
      }
    }
  }
  return current;
}

}  // namespace

const PlacementScore& ScoreLog::score(PlacementScorer& scorer, const std::vector<int>& placement) {
  auto it = scored_.find(placement);
  if (it != scored_.end()) return it->second;
  return scored_.emplace(placement, scorer.score(placement)).first->second;
}

bool better_score(const PlacementScore& a, const PlacementScore& b) {
  if (a.fits != b.fits) return a.fits;
  if (a.fits) return sorts_before(a.best.step_seconds, b.best.step_seconds);
  return overflow_key(a) < overflow_key(b);
}

std::vector<int> chain_of(const PlacementScorer& scorer) {
  const Graph& g = *scorer.request().graph;
  const std::vector<int>& ops = scorer.compute_ops();
  std::vector<int> pos(static_cast<size_t>(g.size()), -1);
  for (size_t k = 0; k < ops.size(); ++k) pos[static_cast<size_t>(ops[k])] = static_cast<int>(k);
  const int n = static_cast<int>(ops.size());
  std::vector<int> consumers(ops.size(), 0);
  for (int k = 0; k < n; ++k) {
    std::set<int> inputs;
    for (int in : g.node(ops[static_cast<size_t>(k)]).inputs)
      if (pos[static_cast<size_t>(in)] >= 0) inputs.insert(pos[static_cast<size_t>(in)]);
    if (k == 0 ? !inputs.empty() : inputs != std::set<int>{k - 1}) return {};
    for (int in : inputs) ++consumers[static_cast<size_t>(in)];
  }
  // Each op's only computed consumer is the next (the graph is in order, so
  // a later op reading it would have shown up above).
  for (int k = 0; k < n; ++k)
    if (consumers[static_cast<size_t>(k)] != (k + 1 < n ? 1 : 0)) return {};
  return ops;
}

SearchResult search_chain(PlacementScorer& scorer, ScoreLog& log, const std::vector<int>& chain) {
  return ChainSearch(scorer, log, chain).run();
}

SearchResult search_graph(PlacementScorer& scorer, ScoreLog& log) {
  const int budget = scorer.evaluations() + std::max(scorer.request().max_evaluations, 1);
  std::vector<std::vector<int>> seeds;
  for (int d = 0; d < scorer.device_count(); ++d) seeds.push_back(all_on(scorer, d));
  seeds.push_back(list_schedule(scorer));
  const std::vector<int>& ops = scorer.compute_ops();
  const std::vector<int> staged = bottleneck_stages(scorer, ops, stage_costs(scorer, ops, scorer.choices().front()));
  if (!staged.empty()) seeds.push_back(placement_from(scorer, ops, staged));
  for (const std::vector<int>& s : seeds) log.score(scorer, s);
  std::stable_sort(seeds.begin(), seeds.end(), [&](const std::vector<int>& a, const std::vector<int>& b) {
    return better_score(log.score(scorer, a), log.score(scorer, b));
  });
  for (size_t k = 0; k < std::min<size_t>(2, seeds.size()); ++k) local_search(scorer, log, seeds[k], budget);
  SearchResult r;
  r.method = "heuristic";
  r.best = best_of(log);
  return r;
}

}  // namespace devmap
