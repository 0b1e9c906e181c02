// One op across devices (core/graph/split_op.h): the rewrite into parts and
// a concat, the rounding of shares, what cannot split, and where a part's
// parameters sit in the whole op's.
#include "core/graph/split_op.h"

#include <gtest/gtest.h>

#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

// reference_cnn() with fc1 split over cpu:0 and cpu:1 and relu3 (fc1's
// consumer) on cpu:1.
Graph split_fc1(std::vector<SplitShare> shares, std::vector<int>& origin) {
  Graph g = reference_cnn();
  g.node(g.find("relu3")).device = "cpu:1";
  std::vector<std::vector<SplitShare>> splits(g.nodes().size());
  splits[static_cast<size_t>(g.find("fc1"))] = std::move(shares);
  return split_ops(g, splits, origin);
}

TEST(SplitOp, DenseBecomesPartsOnTheirDevicesJoinedByAConcatWhereItsConsumerRuns) {
  std::vector<int> origin;
  const Graph whole = reference_cnn();
  const Graph g = split_fc1({{"cpu:0", 0.25}, {"cpu:1", 0.75}}, origin);
  ASSERT_EQ(g.size(), whole.size() + 2);
  const Node& p0 = g.node(g.find("fc1/part0"));
  const Node& p1 = g.node(g.find("fc1/part1"));
  const Node& fc1 = g.node(g.find("fc1"));
  EXPECT_EQ(p0.device, "cpu:0");
  EXPECT_EQ(p1.device, "cpu:1");
  EXPECT_EQ(p0.attrs.get_int("units"), 256);
  EXPECT_EQ(p1.attrs.get_int("units"), 768);
  EXPECT_EQ(p0.part_of, "fc1");
  EXPECT_EQ(p0.part_begin, 0);
  EXPECT_EQ(p1.part_begin, 256);
  EXPECT_EQ(p1.part_whole, 1024);
  EXPECT_EQ(p0.inputs, (std::vector<int>{g.find("flat")}));
  EXPECT_EQ(p1.inputs, p0.inputs);
  EXPECT_EQ(fc1.op(), "concat");
  EXPECT_EQ(fc1.device, "cpu:1") << "where relu3 runs";
  EXPECT_EQ(fc1.inputs, (std::vector<int>{g.find("fc1/part0"), g.find("fc1/part1")}));
  EXPECT_EQ(fc1.out_shape, whole.node(whole.find("fc1")).out_shape);
  EXPECT_EQ(g.node(g.find("relu3")).inputs, (std::vector<int>{g.find("fc1")}));
  EXPECT_EQ(g.param_count(), whole.param_count()) << "the parts hold the whole op's parameters";
  ASSERT_EQ(origin.size(), static_cast<size_t>(g.size()));
  for (const char* n : {"fc1/part0", "fc1/part1", "fc1"})
    EXPECT_EQ(origin[static_cast<size_t>(g.find(n))], whole.find("fc1")) << n;
  EXPECT_EQ(origin[static_cast<size_t>(g.find("relu3"))], whole.find("relu3"));
}

TEST(SplitOp, SeveralPartsOnOneDeviceAreOpsOfTheirOwnInShareOrder) {
  std::vector<int> origin;
  const Graph g = split_fc1({{"cpu:0", 0.125}, {"cpu:0", 0.375}, {"cpu:1", 0.25}, {"cpu:1", 0.25}}, origin);
  std::vector<int> parts;
  int64_t row = 0;
  for (size_t k = 0; k < 4; ++k) {
    const int i = g.find(part_name("fc1", k));
    ASSERT_GE(i, 0) << k;
    parts.push_back(i);
    const Node& p = g.node(i);
    EXPECT_EQ(p.device, k < 2 ? "cpu:0" : "cpu:1") << k;
    EXPECT_EQ(p.part_begin, row) << "parts follow one another: " << k;
    const WholeParam w = whole_param(p, p.params[0]);
    EXPECT_EQ(w.name, "fc1.weight");
    EXPECT_EQ(w.shape, (Shape{1024, 3136}));
    EXPECT_EQ(w.offset, row * 3136) << "its rows of the whole weight: " << k;
    row += p.attrs.get_int("units");
  }
  EXPECT_EQ(row, 1024);
  EXPECT_EQ(g.node(parts[0]).attrs.get_int("units"), 128);
  EXPECT_EQ(g.node(parts[1]).attrs.get_int("units"), 384);
  EXPECT_EQ(g.node(g.find("fc1")).inputs, parts) << "the concat joins them in part order";
}

// fc1 split into three parts on cpu:0 and three on cpu:1 with its input
// `flat` on cpu:1 (relu3 too).
Graph split_fc1_three_each(std::vector<int>& origin) {
  Graph g = reference_cnn();
  g.node(g.find("flat")).device = "cpu:1";
  g.node(g.find("relu3")).device = "cpu:1";
  std::vector<std::vector<SplitShare>> splits(g.nodes().size());
  splits[static_cast<size_t>(g.find("fc1"))] = {{"cpu:0", 0.125}, {"cpu:1", 0.25}, {"cpu:0", 0.125},
                                                {"cpu:1", 0.125}, {"cpu:0", 0.25}, {"cpu:1", 0.125}};
  return split_ops(g, splits, origin);
}

TEST(SplitOp, PartsOnADeviceAwayFromTheirInputReadItThroughOneFanOut) {
  std::vector<int> origin;
  const Graph whole = reference_cnn();
  const Graph g = split_fc1_three_each(origin);
  ASSERT_EQ(g.size(), whole.size() + 6 + 1) << "six parts, one fan-out (cpu:0's), the concat for fc1";
  const int fan = g.find(fan_out_name("fc1", 0));
  ASSERT_GE(fan, 0);
  EXPECT_EQ(g.find(fan_out_name("fc1", 1)), -1) << "cpu:1 holds the input: no fan-out there";
  const Node& f = g.node(fan);
  EXPECT_EQ(f.device, "cpu:0");
  EXPECT_EQ(f.op(), "reshape");
  EXPECT_EQ(f.inputs, (std::vector<int>{g.find("flat")}));
  EXPECT_EQ(f.out_shape, g.node(g.find("flat")).out_shape) << "an identity";
  EXPECT_LT(fan, g.find("fc1/part0")) << "before the parts";
  EXPECT_EQ(origin[static_cast<size_t>(fan)], whole.find("fc1"));
  for (size_t k = 0; k < 6; ++k) {
    const Node& p = g.node(g.find(part_name("fc1", k)));
    EXPECT_EQ(p.inputs, (std::vector<int>{p.device == "cpu:0" ? fan : g.find("flat")})) << k;
  }
  EXPECT_TRUE(is_fan_out(g, fan));
  EXPECT_TRUE(made_by_split(g, fan));
  EXPECT_FALSE(is_fan_out(g, g.find("flat")));
  EXPECT_EQ(g.param_count(), whole.param_count());
}

TEST(SplitOp, OnePartOnADeviceOrAnInputWithoutAGradientGetsNoFanOut) {
  Graph g = reference_cnn();
  std::vector<std::vector<SplitShare>> splits(g.nodes().size());
  // conv1 reads the image, which gets no gradient; fc1 has one part on
  // cpu:1, away from flat, and two beside it on cpu:0.
  splits[static_cast<size_t>(g.find("conv1"))] = {{"cpu:1", 0.5}, {"cpu:1", 0.5}};
  splits[static_cast<size_t>(g.find("fc1"))] = {{"cpu:0", 0.25}, {"cpu:0", 0.25}, {"cpu:1", 0.5}};
  std::vector<int> origin;
  const Graph s = split_ops(g, splits, origin);
  EXPECT_EQ(s.size(), g.size() + 2 + 3) << "the parts and nothing else";
  for (const char* op : {"conv1", "fc1"}) EXPECT_EQ(s.find(fan_out_name(op, 0)), -1) << op;
}

// The brief's measured problem: each part's input gradient crossed devices
// on its own. Now the parts on cpu:0 send one, summed there in part order.
TEST(SplitOp, OneInputGradientCrossesPerDeviceWhateverItsParts) {
  std::vector<int> origin;
  const Graph g = split_fc1_three_each(origin);
  const Program program = build_training_program(g);
  const Partition partition = partition_program(g, program);
  const int flat = g.find("flat");
  const int fan = g.find(fan_out_name("fc1", 0));
  std::vector<const Edge*> flat_edges;
  for (const Edge& e : partition.edges)
    if (program.tensors[static_cast<size_t>(e.tensor)].node == flat) flat_edges.push_back(&e);
  ASSERT_EQ(flat_edges.size(), 2u) << "flat forward and one gradient of it";
  EXPECT_FALSE(flat_edges[0]->backward);
  EXPECT_EQ(flat_edges[0]->consumers, (std::vector<std::string>{"cpu:0"})) << "once per device";
  EXPECT_TRUE(flat_edges[1]->backward);
  EXPECT_EQ(flat_edges[1]->name, "flat@grad.fc1/fanout0");
  EXPECT_EQ(flat_edges[1]->producer, "cpu:0");
  EXPECT_EQ(flat_edges[1]->consumers, (std::vector<std::string>{"cpu:1"}));
  // cpu:0 sums its parts' gradients of the fan-out in part order; cpu:1
  // adds that sum and its own parts' in node order.
  std::vector<const Instr*> sums;
  for (const Instr& ins : program.backward)
    if (ins.kind == InstrKind::kSumGrads && (ins.node == fan || ins.node == flat)) sums.push_back(&ins);
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_EQ(sums[0]->node, fan);
  EXPECT_EQ(g.node(sums[0]->node).device, "cpu:0");
  auto names = [&](const Instr& ins) {
    std::vector<std::string> out;
    for (int t : ins.in) out.push_back(program.tensors[static_cast<size_t>(t)].name);
    return out;
  };
  EXPECT_EQ(names(*sums[0]), (std::vector<std::string>{"fc1/fanout0@grad.fc1/part0", "fc1/fanout0@grad.fc1/part2",
                                                       "fc1/fanout0@grad.fc1/part4"}));
  EXPECT_EQ(sums[1]->node, flat);
  EXPECT_EQ(names(*sums[1]), (std::vector<std::string>{"flat@grad.fc1/fanout0", "flat@grad.fc1/part1",
                                                       "flat@grad.fc1/part3", "flat@grad.fc1/part5"}));
}

TEST(SplitOp, Conv2dSplitsByFilters) {
  Graph g = reference_cnn();
  std::vector<std::vector<SplitShare>> splits(g.nodes().size());
  splits[static_cast<size_t>(g.find("conv2"))] = {{"cpu:0", 0.5}, {"cpu:1", 0.25}, {"cpu:0", 0.25}};
  std::vector<int> origin;
  const Graph s = split_ops(g, splits, origin);
  EXPECT_EQ(s.node(s.find("conv2/part0")).attrs.get_int("filters"), 32);
  EXPECT_EQ(s.node(s.find("conv2/part1")).attrs.get_int("filters"), 16);
  EXPECT_EQ(s.node(s.find("conv2/part2")).attrs.get_int("filters"), 16);
  EXPECT_EQ(s.node(s.find("conv2/part2")).part_begin, 48);
  EXPECT_EQ(s.node(s.find("conv2")).out_shape, (Shape{64, 14, 14}));
  EXPECT_EQ(s.node(s.find("conv2/part1")).params[0].shape, (Shape{16, 32, 5, 5}));
}

TEST(SplitOp, SharesRoundToWholeOutputsAndEveryPartGetsOne) {
  EXPECT_EQ(split_bounds(1024, {0.5, 0.5}, "x"), (std::vector<int64_t>{0, 512, 1024}));
  EXPECT_EQ(split_bounds(10, {1.0 / 3, 1.0 / 3, 1.0 / 3}, "x"), (std::vector<int64_t>{0, 3, 7, 10}));
  EXPECT_EQ(split_bounds(3, {0.34, 0.66}, "x"), (std::vector<int64_t>{0, 1, 3}));
  try {
    split_bounds(10, {0.01, 0.99}, "op 'fc1' split");
    FAIL() << "a part without outputs";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(std::string(e.what()),
              "op 'fc1' split: part 0 (share 0.01) gets none of the 10 outputs; give it a larger share or split "
              "into fewer parts");
  }
}

TEST(SplitOp, OnlyDenseAndUngroupedConv2dCanSplit) {
  const Graph g = reference_cnn();
  EXPECT_EQ(split_refusal(g.node(g.find("fc1"))), "");
  EXPECT_EQ(split_refusal(g.node(g.find("conv1"))), "");
  EXPECT_EQ(split_refusal(g.node(g.find("relu1"))),
            "op 'relu1' (relu) cannot be split across devices (ops that can: conv2d, dense)");
  Node grouped = g.node(g.find("conv2"));
  grouped.attrs.set("groups", int64_t{2});
  EXPECT_EQ(split_refusal(grouped),
            "op 'conv2' (conv2d) has 2 channel groups; only a conv2d with groups 1 can be split across devices");
}

TEST(SplitOp, APartsParametersAreRowsOfTheWholeOpsTensors) {
  std::vector<int> origin;
  const Graph g = split_fc1({{"cpu:0", 0.25}, {"cpu:1", 0.75}}, origin);
  const Node& p1 = g.node(g.find("fc1/part1"));
  const WholeParam w = whole_param(p1, p1.params[0]);
  EXPECT_EQ(w.name, "fc1.weight");
  EXPECT_EQ(w.shape, (Shape{1024, 3136}));
  EXPECT_EQ(w.offset, 256 * 3136);
  const WholeParam b = whole_param(p1, p1.params[1]);
  EXPECT_EQ(b.name, "fc1.bias");
  EXPECT_EQ(b.shape, (Shape{1024}));
  EXPECT_EQ(b.offset, 256);
  const Node& logits = g.node(g.find("logits"));
  const WholeParam l = whole_param(logits, logits.params[0]);
  EXPECT_EQ(l.name, "logits.weight");
  EXPECT_EQ(l.shape, logits.params[0].shape);
  EXPECT_EQ(l.offset, 0);
}

}  // namespace
}  // namespace devmap
