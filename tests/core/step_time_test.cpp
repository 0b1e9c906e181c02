// Step-time prediction from per-op costs (core/plan/step_time.h) and the rule of
// `micro_batches: auto`: the fewest micro-batches within 5% of the best.
#include "core/plan/step_time.h"

#include <gtest/gtest.h>

#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

struct Planned {
  Graph graph;
  Program program;
  Partition partition;
};

// conv layers on cpu:0, dense layers on cpu:1 (fashion_mnist_cnn_split.yaml).
Planned split_cnn() {
  Planned p{reference_cnn(), {}, {}};
  for (int i = 0; i < p.graph.size(); ++i) p.graph.node(i).device = i <= p.graph.find("pool2") ? "cpu:0" : "cpu:1";
  p.program = build_training_program(p.graph);
  p.partition = partition_program(p.graph, p.program);
  return p;
}

// Every op costs `per_sample` seconds per sample forward and twice that
// backward, plus `fixed` per call; handoffs and updates as given.
StepCosts linear_costs(double per_sample, double fixed, double handoff = 0, double update = 0) {
  StepCosts c;
  c.op = [=](int, const std::string&, int64_t batch) {
    const double f = fixed + per_sample * static_cast<double>(batch);
    return OpSeconds{f, 2 * f};
  };
  c.transfer = [=](const std::string&, const std::string&, int64_t) { return handoff; };
  c.optimizer = [=](const std::string&) { return update; };
  return c;
}

TEST(StepTime, OneMicroBatchRunsTheDevicesInTurn) {
  const Planned p = split_cnn();
  const StepCosts costs = linear_costs(1e-4, 0);
  const StepPrediction one = predict_step(p.partition, true, PipelineKind::k1f1b, 64, 1, costs);
  // Lock-step with one micro-batch: the step is every op's time added up.
  double total = 0;
  for (const DeviceProgram& dp : p.partition.programs) {
    for (const Instr& ins : dp.forward)
      if (ins.kind == InstrKind::kForward) total += costs.op(ins.node, dp.device, 64).forward;
    for (const Instr& ins : dp.backward)
      if (ins.kind == InstrKind::kBackward) total += costs.op(ins.node, dp.device, 64).backward;
  }
  EXPECT_NEAR(one.seconds, total, 1e-12);
  ASSERT_EQ(one.busy.size(), 2u);
  EXPECT_NEAR(one.busy[0] + one.busy[1], total, 1e-12);
}

TEST(StepTime, PipeliningOverlapsTheDevices) {
  const Planned p = split_cnn();
  const StepCosts costs = linear_costs(1e-4, 0);
  const double one = predict_step(p.partition, true, PipelineKind::k1f1b, 64, 1, costs).seconds;
  const double four = predict_step(p.partition, true, PipelineKind::k1f1b, 64, 4, costs).seconds;
  const double lockstep_four = predict_step(p.partition, true, PipelineKind::kNone, 64, 4, costs).seconds;
  EXPECT_NEAR(lockstep_four, one, 1e-12);  // same work, nothing overlaps, no fixed cost
  EXPECT_LT(four, 0.85 * one);
}

// Devices on one host slow each other down only while both compute: the
// lock-step step (the devices take turns) is unchanged, the pipelined one
// is longer, and no longer than if every action were slowed throughout.
TEST(StepTime, ContentionSlowsOnlyWhatOverlaps) {
  const Planned p = split_cnn();
  const StepCosts alone = linear_costs(1e-4, 0);
  StepCosts shared = alone;
  shared.contention = 0.5;
  shared.contends = [](const std::string&) { return true; };
  auto step = [&](const StepCosts& c, PipelineKind kind, int count) {
    return predict_step(p.partition, true, kind, 64, count, c);
  };
  EXPECT_NEAR(step(shared, PipelineKind::kNone, 4).seconds, step(alone, PipelineKind::kNone, 4).seconds, 1e-12);
  const StepPrediction free = step(alone, PipelineKind::k1f1b, 4), slowed = step(shared, PipelineKind::k1f1b, 4);
  EXPECT_GT(slowed.seconds, free.seconds * 1.05);
  EXPECT_LT(slowed.seconds, free.seconds * 1.5);
  // Busy time grows by the slowdown of what overlapped.
  EXPECT_GT(slowed.busy[0] + slowed.busy[1], free.busy[0] + free.busy[1]);
  // A device that does not contend (a GPU) is not slowed.
  shared.contends = [](const std::string& d) { return d == "cpu:0"; };
  EXPECT_NEAR(step(shared, PipelineKind::k1f1b, 4).seconds, free.seconds, 1e-12);
}

TEST(StepTime, HandoffsAndUpdatesAddToTheStep) {
  const Planned p = split_cnn();
  const double base = predict_step(p.partition, true, PipelineKind::kNone, 64, 1, linear_costs(1e-4, 0)).seconds;
  // One micro-batch, lock-step: the forward and the backward cut edge each
  // cost one handoff on the critical path, and the slower update follows.
  const double with =
      predict_step(p.partition, true, PipelineKind::kNone, 64, 1, linear_costs(1e-4, 0, 1e-3, 5e-3)).seconds;
  EXPECT_NEAR(with - base, 2e-3 + 5e-3, 1e-9);
  // A step's overhead besides its ops: the largest of its devices'.
  StepCosts overhead = linear_costs(1e-4, 0);
  overhead.step_overhead = [](const std::string& d) { return d == "cpu:1" ? 2e-3 : 1e-3; };
  EXPECT_NEAR(predict_step(p.partition, true, PipelineKind::kNone, 64, 1, overhead).seconds - base, 2e-3, 1e-9);
}

TEST(StepTime, AutoTakesTheFewestMicroBatchesWithinFivePercentOfTheBest) {
  const Planned p = split_cnn();
  // A fixed cost per call makes many micro-batches expensive: the best
  // count is in the middle, and the rule takes the fewest near it.
  const StepCosts costs = linear_costs(1e-4, 2e-4);
  const MicroBatchChoice c =
      choose_micro_batches(p.partition, true, PipelineKind::k1f1b, 64, micro_batch_candidates(64, 1, 16), costs);
  ASSERT_EQ(c.predicted.size(), 8u);  // 1 2 3 4 6 8 12 16
  double best = c.predicted[0].second;
  for (const auto& [count, s] : c.predicted) best = std::min(best, s);
  bool seen = false;
  for (const auto& [count, s] : c.predicted) {
    if (count == c.count) {
      seen = true;
      EXPECT_LE(s, best * 1.05);
      break;
    }
    EXPECT_GT(s, best * 1.05) << count << " is within 5% and fewer than " << c.count;
  }
  EXPECT_TRUE(seen);
  EXPECT_GT(c.count, 1);
  EXPECT_LT(c.count, 16);
  // Without a fixed cost, more micro-batches only overlap more; the rule
  // still stops where the gain falls under 5%.
  const MicroBatchChoice free =
      choose_micro_batches(p.partition, true, PipelineKind::k1f1b, 64, {1, 2, 4, 8, 16}, linear_costs(1e-4, 0));
  EXPECT_LT(free.count, 16);
  EXPECT_GT(free.count, 1);
}

TEST(StepTime, CandidatesStartAtTheBudgetsMinimum) {
  EXPECT_EQ(micro_batch_candidates(64, 1, 16), (std::vector<int>{1, 2, 3, 4, 6, 8, 12, 16}));
  EXPECT_EQ(micro_batch_candidates(64, 5, 16), (std::vector<int>{5, 6, 8, 12, 16}));
  EXPECT_EQ(micro_batch_candidates(64, 40, 16), (std::vector<int>{40}));  // the budget wins
  EXPECT_EQ(micro_batch_candidates(3, 1, 16), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(micro_batch_candidates(256, 1, 64), (std::vector<int>{1, 2, 3, 4, 6, 8, 12, 16, 32, 64}));
}

}  // namespace
}  // namespace devmap
