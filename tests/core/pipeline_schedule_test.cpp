// Pipeline schedules as data: the order each device runs its segments in,
// the buffer sets and ring slots they need, the predicted makespan, and the
// deadlock check against the rings' depth.
#include "core/plan/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <map>

#include "core/base/error.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

// conv layers on cpu:0, dense layers on cpu:1 (fashion_mnist_cnn_split.yaml).
Graph split_cnn() {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) g.node(i).device = i <= g.find("pool2") ? "cpu:0" : "cpu:1";
  return g;
}

// cpu:0 -> cpu:1 -> cpu:2 -> cpu:0 (fashion_mnist_cnn_3way.yaml).
Graph three_way_cnn() {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) {
    const std::string& n = g.node(i).name;
    g.node(i).device = n == "fc1" || n == "relu3"                                    ? "cpu:2"
                       : n == "conv2" || n == "relu2" || n == "pool2" || n == "flat" ? "cpu:1"
                                                                                     : "cpu:0";
  }
  return g;
}

struct Planned {
  Graph graph;
  Program program;
  Partition partition;
};

Planned plan(Graph g, bool training = true) {
  Planned p{std::move(g), {}, {}};
  p.program = training ? build_training_program(p.graph) : build_inference_program(p.graph, {p.graph.find("logits")});
  p.partition = partition_program(p.graph, p.program);
  return p;
}

PipelineSchedule schedule(const Planned& p, PipelineKind kind, int micro, std::vector<int> rings = {},
                          bool training = true) {
  ScheduleRequest r;
  r.partition = &p.partition;
  r.training = training;
  r.micro_batches = micro;
  r.kind = kind;
  r.ring_slots = std::move(rings);
  set_flops_costs(p.graph, r);
  return build_schedule(r);
}

std::string order(const PipelineSchedule& s, size_t device) {
  std::string out;
  for (const PipelineAction& a : s.actions[device])
    out += std::string(out.empty() ? "" : " ") + (a.backward ? "B" : "F") + std::to_string(a.micro);
  return out;
}

TEST(PipelineSchedule, SegmentsStartAtTheReceivesTheyWaitFor) {
  Planned p = plan(three_way_cnn());
  const DeviceProgram& cpu0 = p.partition.program_for("cpu:0");
  std::vector<Segment> f = segments_of(cpu0.forward);
  ASSERT_EQ(f.size(), 2u);  // conv1..pool1 and send; then recv, logits, loss
  EXPECT_EQ(cpu0.forward[static_cast<size_t>(f[1].begin)].kind, InstrKind::kRecv);
  EXPECT_EQ(segments_of(p.partition.program_for("cpu:1").forward).size(), 1u);
}

TEST(PipelineSchedule, TheThreeKindsOnASplitChain) {
  Planned p = plan(split_cnn());
  PipelineSchedule none = schedule(p, PipelineKind::kNone, 4);
  EXPECT_EQ(order(none, 0), "F0 B0 F1 B1 F2 B2 F3 B3");
  EXPECT_EQ(order(none, 1), "F0 B0 F1 B1 F2 B2 F3 B3");
  EXPECT_EQ(none.sets, (std::vector<int>{1, 1}));

  PipelineSchedule gpipe = schedule(p, PipelineKind::kGpipe, 4);
  EXPECT_EQ(order(gpipe, 0), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(order(gpipe, 1), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(gpipe.sets, (std::vector<int>{4, 4}));

  // Stage 0 of 2 holds at most 2 micro-batches, stage 1 at most 1; once
  // full, forwards and backwards alternate.
  PipelineSchedule f1b = schedule(p, PipelineKind::k1f1b, 4);
  EXPECT_EQ(order(f1b, 0), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(order(f1b, 1), "F0 B0 F1 B1 F2 B2 F3 B3");
  EXPECT_EQ(f1b.sets, (std::vector<int>{2, 1}));
  // Overlap shortens the step.
  EXPECT_LT(f1b.makespan, none.makespan);
  EXPECT_LT(gpipe.makespan, none.makespan);
  // Busy time is the same work however it is ordered.
  EXPECT_DOUBLE_EQ(f1b.busy[0], none.busy[0]);
}

TEST(PipelineSchedule, EverySegmentRunsItsMicroBatchesInOrder) {
  for (Graph g : {split_cnn(), three_way_cnn()}) {
    Planned p = plan(std::move(g));
    for (PipelineKind kind : {PipelineKind::kNone, PipelineKind::kGpipe, PipelineKind::k1f1b}) {
      PipelineSchedule s = schedule(p, kind, 5);
      for (const auto& actions : s.actions) {
        std::map<std::pair<bool, int>, int> next;
        for (const PipelineAction& a : actions) {
          const std::pair<bool, int> key(a.backward, a.segment);
          EXPECT_EQ(next[key]++, a.micro) << pipeline_kind_name(kind);
          EXPECT_LT(a.set, 5);
        }
      }
    }
  }
}

TEST(PipelineSchedule, AMapThatReturnsToADeviceGivesItTwoStages) {
  Planned p = plan(three_way_cnn());
  PipelineSchedule s = schedule(p, PipelineKind::k1f1b, 4);
  // cpu:0 holds stage 0 of 4 (and the last): up to 4 in flight.
  EXPECT_EQ(s.sets[0], 4);
  std::string cpu0;
  for (const PipelineAction& a : s.actions[0])
    cpu0 += std::string(cpu0.empty() ? "" : " ") + (a.backward ? "B" : "F") + std::to_string(a.micro) + "." +
            std::to_string(a.segment);
  EXPECT_EQ(cpu0.substr(0, 11), "F0.0 F1.0 F") << cpu0;
  EXPECT_LT(s.makespan, schedule(p, PipelineKind::kNone, 4).makespan);
}

TEST(PipelineSchedule, RingsTooShallowForTheScheduleAreRejected) {
  Planned p = plan(split_cnn());
  // gpipe sends four activations before the first backward frees one.
  PipelineSchedule needs = schedule(p, PipelineKind::kGpipe, 4);
  EXPECT_EQ(needs.edge_slots[0], 4);
  try {
    schedule(p, PipelineKind::kGpipe, 4, {2, 2});
    FAIL() << "gpipe with 4 micro-batches needs 4 slots of pool2";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("would deadlock: cpu:0 waits for a free slot of pool2 (its ring has 2)"),
              std::string::npos)
        << e.what();
  }
  // Deep enough rings: the same order as without a limit.
  EXPECT_EQ(order(schedule(p, PipelineKind::kGpipe, 4, {4, 4}), 0), order(needs, 0));
  // 1f1b needs 2 slots of the forward edge; lock-step 1.
  EXPECT_EQ(schedule(p, PipelineKind::k1f1b, 4).edge_slots[0], 2);
  EXPECT_EQ(schedule(p, PipelineKind::kNone, 4).edge_slots[0], 1);
  EXPECT_NO_THROW(schedule(p, PipelineKind::k1f1b, 4, {2, 2}));
}

TEST(PipelineSchedule, InferenceStreamsBatchesThroughTheDevices) {
  Planned p = plan(split_cnn(), false);
  PipelineSchedule s = schedule(p, PipelineKind::k1f1b, 3, {}, false);
  EXPECT_EQ(order(s, 0), "F0 F1 F2");
  EXPECT_EQ(order(s, 1), "F0 F1 F2");
  EXPECT_LT(s.makespan, schedule(p, PipelineKind::kNone, 3, {}, false).makespan);
}

TEST(PipelineSchedule, KindsByName) {
  EXPECT_EQ(parse_pipeline_kind("1f1b"), PipelineKind::k1f1b);
  EXPECT_EQ(std::string(pipeline_kind_name(PipelineKind::kGpipe)), "gpipe");
  EXPECT_THROW(parse_pipeline_kind("zigzag"), Error);
}

TEST(PipelineSchedule, TransfersDelayTheReceiverAndNothingElse) {
  Planned p = plan(split_cnn());
  ASSERT_EQ(p.partition.edges.size(), 2u);  // pool2 forward, pool2@grad backward
  for (PipelineKind kind : {PipelineKind::kNone, PipelineKind::kGpipe, PipelineKind::k1f1b}) {
    ScheduleRequest r;
    r.partition = &p.partition;
    r.micro_batches = 3;
    r.kind = kind;
    set_flops_costs(p.graph, r);
    const PipelineSchedule instant = build_schedule(r);
    r.edge_cost = {0.0, 0.0};
    const PipelineSchedule zero = build_schedule(r);
    EXPECT_EQ(zero.makespan, instant.makespan) << pipeline_kind_name(kind);
    const double delay = 1e7;  // in the FLOPs unit of set_flops_costs
    r.edge_cost = {delay, delay};
    const PipelineSchedule slow = build_schedule(r);
    EXPECT_EQ(slow.busy, instant.busy) << pipeline_kind_name(kind);
    EXPECT_GT(slow.makespan, instant.makespan) << pipeline_kind_name(kind);
    if (kind == PipelineKind::kNone) {  // lock-step: every micro-batch crosses both ways in turn
      EXPECT_NEAR(slow.makespan, instant.makespan + 3 * 2 * delay, 1e-6 * slow.makespan);
    }
  }
}

}  // namespace
}  // namespace devmap
