// Reverse-mode autodiff builds the expected backward program.
#include "core/plan/program.h"

#include <gtest/gtest.h>

#include "core/exec/worker_plan.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

// image -> dense(a) -> relu -> dense(logits) -> loss, with labels.
Graph chain() {
  Graph g;
  g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{4})));
  g.add(make("label", "labels", {}, with("classes", int64_t{3})));
  g.add(make("a", "dense", {0}, with("units", int64_t{5})));
  g.add(make("r", "relu", {2}));
  g.add(make("logits", "dense", {3}, with("units", int64_t{3})));
  g.add(make("loss", "softmax_cross_entropy", {4, 1}));
  g.add(make("acc", "accuracy", {4, 1}));
  g.infer();
  return g;
}

TEST(Autodiff, ChainGetsOneBackwardPerOpInReverseOrder) {
  Graph g = chain();
  Program p = build_training_program(g);
  std::vector<int> fwd, bwd;
  for (const Instr& i : p.forward) fwd.push_back(i.node);
  for (const Instr& i : p.backward) bwd.push_back(i.node);
  EXPECT_EQ(fwd, (std::vector<int>{2, 3, 4, 5, 6}));
  EXPECT_EQ(bwd, (std::vector<int>{5, 4, 3, 2}));
  // The first dense layer's input (the image) needs no gradient.
  EXPECT_EQ(p.backward.back().out, (std::vector<int>{-1}));
  // The loss sends no gradient to the labels.
  EXPECT_EQ(p.backward.front().out[1], -1);
  EXPECT_EQ(p.grad_of[0], -1);
  EXPECT_EQ(p.grad_of[1], -1);
  EXPECT_EQ(p.loss_grad, p.grad_of[5]);
}

TEST(Autodiff, OpsOffTheLossPathGetNoBackward) {
  Graph g;
  g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{4})));
  g.add(make("label", "labels", {}, with("classes", int64_t{4})));
  g.add(make("a", "dense", {0}, with("units", int64_t{4})));
  g.add(make("side", "dense", {2}, with("units", int64_t{4})));  // feeds nothing
  g.add(make("loss", "softmax_cross_entropy", {2, 1}));
  g.infer();
  Program p = build_training_program(g);
  for (const Instr& i : p.forward) EXPECT_NE(i.node, 3) << "an op nothing needs is not computed";
  for (const Instr& i : p.backward) EXPECT_NE(i.node, 3);
  EXPECT_FALSE(p.needed[3]);
  ASSERT_EQ(p.backward.size(), 2u);
}

TEST(Autodiff, NoLossIsAnError) {
  Graph g;
  g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{4})));
  g.add(make("a", "dense", {0}, with("units", int64_t{4})));
  g.infer();
  EXPECT_THROW(build_training_program(g), Error);
  Program inf = build_inference_program(g, {1});
  EXPECT_EQ(inf.forward.size(), 1u);
  EXPECT_TRUE(inf.backward.empty());
}

TEST(WorkerPlan, RoundTripsThroughBytes) {
  WorkerPlan p;
  p.device = "cpu:1";
  p.threads = 2;
  p.seed = 42;
  p.optimizer.kind = OptimizerConfig::Kind::kAdam;
  p.optimizer.learning_rate = 0.001;
  p.optimizer.schedule.kind = LrSchedule::Kind::kCosine;
  p.optimizer.schedule.warmup_steps = 5;
  p.optimizer.schedule.warmup_start_factor = 0.25;
  p.optimizer.schedule.min_learning_rate = 1e-5;
  p.optimizer.schedule.total_steps = 100;
  p.max_batch = 64;
  p.graph = chain();
  p.graph.node(1).recomputed = true;  // the plan's choice travels (core/plan/recompute.h)
  p.offload = true;                   // devices.NAME.offload
  Node& part = p.graph.node(2);       // a part of a split op travels (core/graph/split_op.h)
  part.part_of = "whole";
  part.part_begin = 3;
  part.part_whole = 8;
  p.input_segment = "devmap-1-abc-input";
  p.layout = InputLayout::for_graph(p.graph, 64, 2);
  WorkerPlan q = decode_worker_plan(encode_worker_plan(p));
  EXPECT_EQ(q.device, "cpu:1");
  EXPECT_EQ(q.threads, 2);
  EXPECT_TRUE(q.offload);
  EXPECT_EQ(q.seed, 42u);
  EXPECT_EQ(q.optimizer.kind, OptimizerConfig::Kind::kAdam);
  EXPECT_EQ(q.optimizer.learning_rate, 0.001);
  EXPECT_EQ(q.optimizer.schedule.kind, LrSchedule::Kind::kCosine);
  EXPECT_EQ(q.optimizer.schedule.warmup_steps, 5);
  EXPECT_EQ(q.optimizer.schedule.warmup_start_factor, 0.25);
  EXPECT_EQ(q.optimizer.schedule.min_learning_rate, 1e-5);
  EXPECT_EQ(q.optimizer.schedule.total_steps, 100);
  for (int64_t step : {1, 5, 6, 50, 100}) EXPECT_EQ(q.optimizer.rate_at(step), p.optimizer.rate_at(step)) << step;
  ASSERT_EQ(q.graph.size(), p.graph.size());
  for (int i = 0; i < p.graph.size(); ++i) {
    EXPECT_EQ(q.graph.node(i).name, p.graph.node(i).name);
    EXPECT_EQ(q.graph.node(i).out_shape, p.graph.node(i).out_shape);
    EXPECT_EQ(q.graph.node(i).inputs, p.graph.node(i).inputs);
    EXPECT_EQ(q.graph.node(i).recomputed, p.graph.node(i).recomputed);
    EXPECT_EQ(q.graph.node(i).part_of, p.graph.node(i).part_of);
    EXPECT_EQ(q.graph.node(i).part_begin, p.graph.node(i).part_begin);
    EXPECT_EQ(q.graph.node(i).part_whole, p.graph.node(i).part_whole);
  }
  EXPECT_EQ(q.layout.slot_bytes, p.layout.slot_bytes);
  EXPECT_EQ(q.layout.input_offsets, p.layout.input_offsets);
}

TEST(WorkerPlan, APartBeyondItsWholeOpIsAnError) {
  WorkerPlan p;
  p.graph = chain();
  p.layout = InputLayout::for_graph(p.graph, 8, 2);
  Node& part = p.graph.node(2);  // 5 units
  part.part_of = "whole";
  part.part_begin = 4;
  part.part_whole = 8;
  EXPECT_THROW(decode_worker_plan(encode_worker_plan(p)), Error);
  part.part_begin = 3;
  EXPECT_NO_THROW(decode_worker_plan(encode_worker_plan(p)));
}

TEST(WorkerPlan, TruncatedBytesAreAnErrorNotACrash) {
  WorkerPlan p;
  p.graph = chain();
  p.layout = InputLayout::for_graph(p.graph, 8, 2);
  std::string bytes = encode_worker_plan(p);
  for (size_t n = 0; n < bytes.size(); n += 7) EXPECT_THROW(decode_worker_plan(bytes.substr(0, n)), Error) << n;
}

}  // namespace
}  // namespace devmap
