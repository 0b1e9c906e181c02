// The plan's choice of recomputed ops (core/plan/recompute_choice.h).
#include "core/plan/recompute_choice.h"

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/plan/partition.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

constexpr int64_t kBatch = 32;

MemoryPlan plan_of(const Graph& g, uint64_t limit) {
  return training_memory_plan(g, kBatch, limit, 1);
}

// Forward seconds: a convolution costs 100 times a cheap op.
RecomputeRequest request_for(uint64_t limit) {
  RecomputeRequest r;
  r.plan = [limit](const Graph& g) { return plan_of(g, limit); };
  return r;
}

void set_costs(RecomputeRequest& r, const Graph& g) {
  r.forward_seconds = [&g](int node) { return g.node(node).op() == "conv2d" ? 1e-3 : 1e-5; };
}

TEST(RecomputeChoice, NothingWhenEveryDeviceFits) {
  Graph g = residual_blocks();
  RecomputeRequest r = request_for(0);
  set_costs(r, g);
  EXPECT_TRUE(choose_recomputes(g, r).empty());
  for (const Node& n : g.nodes()) EXPECT_FALSE(n.recomputed) << n.name;
}

TEST(RecomputeChoice, CheapOpsFirstUntilTheDeviceFitsEachSavingBytes) {
  Graph g = residual_blocks();
  const uint64_t full = plan_of(g, 0).devices.at(0).total();
  // A limit just under the full plan: one cheap recompute is enough.
  RecomputeRequest r = request_for(full - 1);
  set_costs(r, g);
  const std::vector<RecomputePick> picks = choose_recomputes(g, r);
  ASSERT_FALSE(picks.empty());
  for (const RecomputePick& p : picks) {
    EXPECT_NE(g.node(p.node).op(), "conv2d") << "a relu costs less per byte";
    EXPECT_GT(p.saved_bytes, 0);
    EXPECT_TRUE(g.node(p.node).recomputed);
    for (int w : p.with) EXPECT_TRUE(g.node(w).recomputed);
  }
  // A relu after a batch_norm brings the batch_norm, which nothing keeps.
  const RecomputePick& first = picks.front();
  if (g.node(first.node).op() == "relu" && g.node(g.node(first.node).inputs[0]).op() == "batch_norm") {
    EXPECT_EQ(first.with, std::vector<int>{g.node(first.node).inputs[0]});
    EXPECT_DOUBLE_EQ(first.seconds, 2e-5);
  }
  EXPECT_LE(plan_of(g, 0).devices.at(0).total(), full - 1);
}

TEST(RecomputeChoice, ALimitTooSmallForAnyChoiceKeepsWhatSavedAndStops) {
  Graph g = residual_blocks();
  RecomputeRequest r = request_for(1024);
  set_costs(r, g);
  const std::vector<RecomputePick> picks = choose_recomputes(g, r);
  EXPECT_FALSE(picks.empty());
  uint64_t before = plan_of(residual_blocks(), 0).devices.at(0).total();
  int64_t saved = 0;
  for (const RecomputePick& p : picks) saved += p.saved_bytes;
  EXPECT_EQ(static_cast<int64_t>(before - plan_of(g, 0).devices.at(0).total()), saved);
}

TEST(RecomputeChoice, PinsAreKeptNeverAndAlwaysAlike) {
  Graph g = residual_blocks();
  g.node(g.find("relu1")).recompute = Node::Recompute::kAlways;
  g.node(g.find("relu2")).recompute = Node::Recompute::kNever;
  g.node(g.find("bn3")).recompute = Node::Recompute::kNever;  // so relu3 may not be recomputed either
  RecomputeRequest r = request_for(1024);
  set_costs(r, g);
  const std::vector<RecomputePick> picks = choose_recomputes(g, r);
  ASSERT_FALSE(picks.empty());
  EXPECT_EQ(picks.front().node, g.find("relu1"));
  EXPECT_TRUE(picks.front().pinned);
  EXPECT_FALSE(g.node(g.find("relu2")).recomputed);
  EXPECT_FALSE(g.node(g.find("bn3")).recomputed);
  EXPECT_FALSE(g.node(g.find("relu3")).recomputed);
}

TEST(RecomputeChoice, AlwaysOnAnOpThatCannotBeIsAnInputError) {
  Graph g = residual_blocks();
  g.node(g.find("loss")).recompute = Node::Recompute::kAlways;
  RecomputeRequest r = request_for(0);
  set_costs(r, g);
  try {
    choose_recomputes(g, r);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("'loss'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("recompute: always"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace devmap
