// An op split across devices (core/graph/split_op.h) in the executor: the
// parts start from their rows of the whole op's initial weights, train
// within float32 reordering of the whole op, and the memory plan predicts
// what the split graph allocates, with the parts reading their input
// directly or through a fan-out.
#include "core/graph/split_op.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/exec/executor.h"
#include "core/exec/host_memory.h"
#include "core/plan/memory_plan.h"
#include "core/plan/partition.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

// [1, 8, 8] images -> conv (6 filters) -> relu -> flatten -> dense (10) -> loss.
Graph small_cnn() {
  Graph g;
  Attrs conv;
  conv.set("filters", int64_t{6});
  conv.set("kernel", int64_t{3});
  conv.set("padding", int64_t{1});
  g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{1, 8, 8})));
  g.add(make("label", "labels", {}, with("classes", int64_t{10})));
  g.add(make("conv", "conv2d", {0}, conv));
  g.add(make("relu", "relu", {2}));
  g.add(make("flat", "flatten", {3}));
  g.add(make("fc", "dense", {4}, with("units", int64_t{10})));
  g.add(make("loss", "softmax_cross_entropy", {5, 1}));
  g.infer();
  return g;
}

// small_cnn() with conv split 1/3 : 2/3 and fc 0.3 : 0.7 (all parts on
// cpu:0: one executor runs them).
Graph split_cnn() {
  const Graph g = small_cnn();
  std::vector<std::vector<SplitShare>> splits(g.nodes().size());
  splits[static_cast<size_t>(g.find("conv"))] = {{"cpu:0", 1.0 / 3}, {"cpu:0", 2.0 / 3}};
  splits[static_cast<size_t>(g.find("fc"))] = {{"cpu:0", 0.3}, {"cpu:0", 0.7}};
  std::vector<int> origin;
  return split_ops(g, splits, origin);
}

// small_cnn() with fc split 0.3 : 0.7 onto cpu:1, away from flat, so its
// parts read flat through a fan-out (core/graph/split_op.h); then every op
// moved back onto cpu:0, so one executor runs the fan-out too.
Graph split_cnn_with_fan_out() {
  const Graph g = small_cnn();
  std::vector<std::vector<SplitShare>> splits(g.nodes().size());
  splits[static_cast<size_t>(g.find("fc"))] = {{"cpu:1", 0.3}, {"cpu:1", 0.7}};
  std::vector<int> origin;
  Graph s = split_ops(g, splits, origin);
  EXPECT_GE(s.find(fan_out_name("fc", 0)), 0);
  for (int i = 0; i < s.size(); ++i) s.node(i).device = "cpu:0";
  return s;
}

struct Trained {
  std::map<std::string, std::vector<float>> initial, final;  // by the whole op's parameter name
  std::vector<float> losses;
  uint64_t peak = 0;
};

// The parameters of `ex` joined into the whole ops' tensors.
std::map<std::string, std::vector<float>> whole_params(const Executor& ex) {
  std::map<std::string, std::vector<float>> out;
  std::vector<float> v;
  for (const Parameter& p : ex.parameters()) {
    ex.read_parameter(p, v);
    const WholeParam w = whole_param(ex.graph().node(p.node), p.spec);
    std::vector<float>& t = out[w.name];
    t.resize(static_cast<size_t>(w.shape.numel()), NAN);
    std::copy(v.begin(), v.end(), t.begin() + w.offset);
  }
  return out;
}

Trained train(const Graph& g) {
  const Program p = build_training_program(g);
  CpuKernelFactory kernels;
  OptimizerConfig opt;
  opt.kind = OptimizerConfig::Kind::kMomentum;
  HostMemory memory("cpu:0", 0);
  Executor ex(g, p, kernels, opt, 2, 11, nullptr, nullptr, nullptr, &memory);
  const int64_t batch = 8;
  std::vector<float> images(static_cast<size_t>(batch * 64)), labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(i * 2654435761u % 1000) / 1000.0f;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 10);
  for (const char* n : {"image", "label"}) ex.set_external(g.find(n));
  ex.reserve(batch);
  ex.init_parameters();
  ex.bind_output(g.find("image"), images.data());
  ex.bind_output(g.find("label"), labels.data());
  Trained t;
  t.initial = whole_params(ex);
  for (int64_t step = 0; step < 5; ++step) {
    const StepInfo info{step, 0, batch, true};
    ex.forward(batch, info);
    t.losses.push_back(ex.scalar(g.find("loss")));
    ex.backward(batch, info, false);
    ex.apply_optimizer(step + 1);
  }
  t.final = whole_params(ex);
  t.peak = memory.peak_bytes();
  return t;
}

uint64_t planned_total(const Graph& g, int64_t batch) {
  return training_memory_plan(g, batch, 0, optimizer_state_count(OptimizerConfig::Kind::kMomentum))
      .devices.at(0)
      .total();
}

void expect_within_float_reordering(const Trained& split, const Trained& whole) {
  EXPECT_EQ(split.initial, whole.initial) << "each part draws its rows of the whole op's random numbers";
  ASSERT_EQ(split.losses.size(), whole.losses.size());
  for (size_t s = 0; s < whole.losses.size(); ++s)
    EXPECT_NEAR(split.losses[s], whole.losses[s], 1e-5 * std::abs(whole.losses[s])) << "step " << s + 1;
  ASSERT_EQ(split.final.size(), whole.final.size());
  for (const auto& [name, w] : whole.final) {
    const std::vector<float>& s = split.final.at(name);
    ASSERT_EQ(s.size(), w.size()) << name;
    float scale = 0, worst = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      scale = std::max(scale, std::abs(w[i]));
      worst = std::max(worst, std::abs(s[i] - w[i]));
    }
    EXPECT_LE(worst, 1e-5f * scale) << name;
  }
}

TEST(SplitOpExecutor, PartsStartFromTheWholeOpsWeightsAndTrainWithinFloatReordering) {
  const Trained whole = train(small_cnn());
  expect_within_float_reordering(train(split_cnn()), whole);
  SCOPED_TRACE("the parts read their input through a fan-out");
  expect_within_float_reordering(train(split_cnn_with_fan_out()), whole);
}

TEST(SplitOpExecutor, TheSameSplitGivesTheSameBitsAndThePlanItsAllocation) {
  const Graph g = split_cnn();
  const Trained a = train(g), b = train(g);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.final, b.final);
  EXPECT_EQ(planned_total(g, 8), a.peak) << "plan == allocation";
}

TEST(SplitOpExecutor, AFanOutGivesTheSameBitsRunToRunAndThePlanItsAllocation) {
  const Graph g = split_cnn_with_fan_out();
  const Trained a = train(g), b = train(g);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.final, b.final);
  EXPECT_EQ(planned_total(g, 8), a.peak) << "plan == allocation";
}

}  // namespace
}  // namespace devmap
