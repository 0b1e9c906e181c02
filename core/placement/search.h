// The placement searches, over a PlacementScorer:
//
// Chains. When the ops the program computes, set aside the fed inputs and
// the loss and metric sinks, form a chain (each op's only computed input is
// the previous op, and it is the previous op's only computed consumer), a
// placement is contiguous when it cuts the chain into consecutive stages
// and gives each stage its own device (no device holds two stages). The
// chain search returns the contiguous placement with the least predicted
// step time over every choice of micro-batches and schedule, exactly as
// the scorer predicts it (the "chain optimum"); pins restrict the stages.
// It is a branch and bound over stage ends and devices: a PipeDream-style
// dynamic program (stages and device assignments minimising the busiest
// stage) and the one-device placements give the first incumbents, and a
// partial placement is dropped as soon as a lower bound of its step time
// reaches the incumbent. The bound is the least, over the micro-batch
// counts c whose micro-batch leaves every stage's floor bytes (parameter
// state and outputs, PlacementScorer::op_floor_bytes) within its device's
// limit, of max over the stages s so far of
//   sum_{t<s} (F_t + B_t + forward transfer) + c (F_s + B_s)
// (micro-batch 0 reaches stage s, s runs all its forwards and backwards,
// the last gradient goes back down), F and B being a stage's forward and
// backward seconds per micro-batch. Exact unless it tries more than
// kMaxStagesVisited stages or scores the request's max_evaluations
// placements first (then SearchResult::exact is false). Used with at most
// kChainSearchMaxDevices devices; when no contiguous placement fits, the
// heuristic below is tried too.
//
// Other graphs (and chains whose pins force a device to hold two stages):
// a heuristic. Seeds are every one-device placement, a list schedule in
// the style of HEFT (ops by decreasing upward rank, each on the device
// where it finishes first, given its inputs' transfers, skipping devices
// whose parameter state it would overfill) and the bottleneck dynamic
// program over the ops' topological order (with at most
// kChainSearchMaxDevices devices); from the best two, local search
// moves one op at a time to another device (every free op on small graphs,
// ops next to a cut edge on larger ones) while a move improves the score,
// within the request's evaluation budget. Placements compare by: fits,
// then predicted step time; among those that do not fit, the fewest bytes
// over the limits.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/placement/scorer.h"

namespace devmap {

constexpr int kChainSearchMaxDevices = 4;

// Every placement scored, keyed by the placement (planner device per node).
class ScoreLog {
 public:
  const PlacementScore& score(PlacementScorer& scorer, const std::vector<int>& placement);
  const std::map<std::vector<int>, PlacementScore>& all() const { return scored_; }

 private:
  std::map<std::vector<int>, PlacementScore> scored_;
};

// a better than b: fits first, then faster; else fewer bytes over.
bool better_score(const PlacementScore& a, const PlacementScore& b);

struct SearchResult {
  std::vector<int> best;  // complete placement; empty when nothing was scored
  bool exact = false;     // the chain optimum (chain search only)
  std::string method;     // "chain" or "heuristic"
};

// The compute ops in chain order when they form a chain (see above), else
// empty.
std::vector<int> chain_of(const PlacementScorer& scorer);

// The chain search; empty best when pins leave no contiguous placement.
SearchResult search_chain(PlacementScorer& scorer, ScoreLog& log, const std::vector<int>& chain);
SearchResult search_graph(PlacementScorer& scorer, ScoreLog& log);

}  // namespace devmap
