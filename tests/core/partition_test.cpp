// Placement -> per-device programs with send/recv pairs, with no process.
#include "core/plan/partition.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

// Places each op by name (others on cpu:0) and re-infers.
Graph placed(Graph g, const std::map<std::string, std::string>& where) {
  for (int i = 0; i < g.size(); ++i) {
    auto it = where.find(g.node(i).name);
    g.node(i).device = it == where.end() ? "cpu:0" : it->second;
  }
  return g;
}

const Edge* edge_named(const Partition& p, const std::string& name) {
  for (const Edge& e : p.edges)
    if (e.name == name) return &e;
  return nullptr;
}

// Every kRecv on a device is matched by a kSend of the same edge on its
// producer, and every edge is received by each of its consumers once.
void expect_pairs_match(const Partition& p) {
  for (const Edge& e : p.edges) {
    int sends = 0;
    for (const Instr& i : p.program_for(e.producer).forward) sends += i.kind == InstrKind::kSend && i.node == e.id;
    for (const Instr& i : p.program_for(e.producer).backward) sends += i.kind == InstrKind::kSend && i.node == e.id;
    EXPECT_EQ(sends, 1) << e.name;
    for (const std::string& c : e.consumers) {
      int recvs = 0;
      for (const Instr& i : p.program_for(c).forward) recvs += i.kind == InstrKind::kRecv && i.node == e.id;
      for (const Instr& i : p.program_for(c).backward) recvs += i.kind == InstrKind::kRecv && i.node == e.id;
      EXPECT_EQ(recvs, 1) << e.name << " on " << c;
    }
  }
}

TEST(Partition, OneDeviceHasNoEdges) {
  Graph g = placed(reference_cnn(), {});
  Program prog = build_training_program(g);
  Partition p = partition_program(g, prog);
  ASSERT_EQ(p.devices, (std::vector<std::string>{"cpu:0"}));
  EXPECT_TRUE(p.edges.empty());
  EXPECT_EQ(p.programs[0].forward.size(), prog.forward.size());
  EXPECT_EQ(p.programs[0].backward.size(), prog.backward.size());
}

TEST(Partition, AChainCutOnceSendsTheActivationForwardAndItsGradientBack) {
  Graph g = placed(reference_cnn(),
                   {{"flat", "cpu:1"}, {"fc1", "cpu:1"}, {"relu3", "cpu:1"}, {"logits", "cpu:1"}, {"loss", "cpu:1"}});
  Partition p = partition_program(g, build_training_program(g));
  ASSERT_EQ(p.edges.size(), 2u);
  const Edge* fwd = edge_named(p, "pool2");
  const Edge* bwd = edge_named(p, "pool2@grad");
  ASSERT_TRUE(fwd && bwd);
  EXPECT_EQ(fwd->producer, "cpu:0");
  EXPECT_EQ(fwd->consumers, (std::vector<std::string>{"cpu:1"}));
  EXPECT_FALSE(fwd->backward);
  EXPECT_EQ(fwd->bytes(64), 64 * 64 * 7 * 7 * 4);
  EXPECT_EQ(bwd->producer, "cpu:1");
  EXPECT_EQ(bwd->consumers, (std::vector<std::string>{"cpu:0"}));
  EXPECT_TRUE(bwd->backward);
  EXPECT_TRUE(p.program_for("cpu:1").owns_loss);
  EXPECT_FALSE(p.program_for("cpu:0").owns_loss);
  // The labels are fed to cpu:1 directly: no edge for them.
  EXPECT_EQ(edge_named(p, "label"), nullptr);
  expect_pairs_match(p);
}

TEST(Partition, ARoundTripAToBToAHasFourEdges) {
  Graph g = placed(reference_cnn(), {{"conv2", "cpu:1"}, {"relu2", "cpu:1"}});
  Partition p = partition_program(g, build_training_program(g));
  std::vector<std::string> names;
  for (const Edge& e : p.edges) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"pool1", "pool1@grad", "relu2", "relu2@grad"}));
  EXPECT_EQ(edge_named(p, "relu2")->producer, "cpu:1");
  EXPECT_EQ(edge_named(p, "relu2@grad")->consumers, (std::vector<std::string>{"cpu:1"}));
  // cpu:0 sends pool1, then waits for relu2 before pool2.
  const auto& f0 = p.program_for("cpu:0").forward;
  auto pos = [&](InstrKind k, int node) {
    for (size_t i = 0; i < f0.size(); ++i)
      if (f0[i].kind == k && f0[i].node == node) return static_cast<int>(i);
    return -1;
  };
  int send_pool1 = pos(InstrKind::kSend, edge_named(p, "pool1")->id);
  int recv_relu2 = pos(InstrKind::kRecv, edge_named(p, "relu2")->id);
  int pool2 = pos(InstrKind::kForward, g.find("pool2"));
  ASSERT_GE(send_pool1, 0);
  EXPECT_LT(send_pool1, recv_relu2);
  EXPECT_LT(recv_relu2, pool2);
  expect_pairs_match(p);
}

// image -> a -> (b on cpu:1, c on cpu:2) -> add(b, c) on cpu:0 -> logits -> loss.
Graph branches() {
  Graph g;
  g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{8})));
  g.add(make("label", "labels", {}, with("classes", int64_t{4})));
  g.add(make("a", "dense", {0}, with("units", int64_t{6})));
  g.add(make("b", "dense", {2}, with("units", int64_t{6})));
  g.add(make("c", "dense", {2}, with("units", int64_t{6})));
  g.add(make("sum", "add", {3, 4}));
  g.add(make("logits", "dense", {5}, with("units", int64_t{4})));
  g.add(make("loss", "softmax_cross_entropy", {6, 1}));
  g.infer();
  return placed(g, {{"b", "cpu:1"}, {"c", "cpu:2"}});
}

TEST(Partition, ATensorConsumedOnTwoOtherDevicesGoesOnceToEach) {
  Graph g = branches();
  Program prog = build_training_program(g);
  Partition p = partition_program(g, prog);
  EXPECT_EQ(p.devices, (std::vector<std::string>{"cpu:0", "cpu:1", "cpu:2"}));
  const Edge* a = edge_named(p, "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->consumers, (std::vector<std::string>{"cpu:1", "cpu:2"}));
  // a's gradient arrives as one partial from each branch, summed on cpu:0.
  ASSERT_TRUE(edge_named(p, "a@grad.b"));
  ASSERT_TRUE(edge_named(p, "a@grad.c"));
  EXPECT_EQ(edge_named(p, "a@grad.b")->consumers, (std::vector<std::string>{"cpu:0"}));
  int sums = 0;
  for (const Instr& i : p.program_for("cpu:0").backward) sums += i.kind == InstrKind::kSumGrads;
  EXPECT_EQ(sums, 1);
  // The branches' outputs and their gradients cross back and forth too.
  for (const char* n : {"b", "c", "b@grad", "c@grad"}) EXPECT_TRUE(edge_named(p, n)) << n;
  expect_pairs_match(p);
}

TEST(Partition, EachDeviceOwnsOnlyItsOpsParameters) {
  Graph g = branches();
  Partition p = partition_program(g, build_training_program(g));
  const DeviceProgram& d1 = p.program_for("cpu:1");
  EXPECT_TRUE(d1.local_nodes[static_cast<size_t>(g.find("b"))]);
  EXPECT_FALSE(d1.local_nodes[static_cast<size_t>(g.find("a"))]);
  EXPECT_FALSE(d1.local_nodes[static_cast<size_t>(g.find("c"))]);
}

}  // namespace
}  // namespace devmap
