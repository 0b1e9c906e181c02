// Recomputation (core/plan/recompute.h) in the executor: a step with
// recomputed ops gives the bits of the step without, from a smaller arena
// that the memory plan predicts to the byte; a recompute drawing dropout's
// mask with another seed does not.
#include "core/plan/recompute.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/exec/executor.h"
#include "core/exec/host_memory.h"
#include "core/plan/memory_plan.h"
#include "core/plan/partition.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

Graph with_recomputed(std::vector<std::string> names) {
  Graph g = residual_blocks();
  for (const std::string& n : names) g.node(g.find(n)).recomputed = true;
  return g;
}

const std::vector<std::string> kRecomputed{"bn1",   "relu1", "bn2",  "add",   "relu2", "bn3",
                                           "relu3", "bn4",   "add2", "relu4", "drop",  "flat"};

struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;  // trained and state (running statistics)
  uint64_t peak = 0;
};

Trained train(const Graph& g, int64_t batch, uint64_t seed_xor = 0) {
  const Program p = build_training_program(g);
  CpuKernelFactory kernels;
  OptimizerConfig opt;
  opt.kind = OptimizerConfig::Kind::kMomentum;
  HostMemory memory("cpu:0", 0);
  Executor ex(g, p, kernels, opt, 2, 7, nullptr, nullptr, nullptr, &memory);
  ex.set_recompute_seed_xor(seed_xor);
  std::vector<float> images(static_cast<size_t>(batch * 64)), labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(i * 2654435761u % 1000) / 1000.0f;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 10);
  for (const char* n : {"image", "label"}) ex.set_external(g.find(n));
  ex.reserve(batch);
  ex.init_parameters();
  ex.bind_output(g.find("image"), images.data());
  ex.bind_output(g.find("label"), labels.data());
  Trained t;
  for (int64_t step = 0; step < 3; ++step) {
    const StepInfo info{step, 0, batch, true};
    ex.forward(batch, info);
    t.losses.push_back(ex.scalar(g.find("loss")));
    ex.backward(batch, info, false);
    ex.apply_optimizer(step + 1);
  }
  for (const Parameter& q : ex.parameters()) ex.read_parameter(q, t.params.emplace_back());
  t.peak = memory.peak_bytes();
  return t;
}

DeviceMemoryPlan planned(const Graph& g, int64_t batch) {
  return training_memory_plan(g, batch, 0, optimizer_state_count(OptimizerConfig::Kind::kMomentum)).devices.at(0);
}

TEST(Recompute, TrainsWithTheBitsOfNoRecomputeFromLessMemory) {
  const Graph plain = residual_blocks(), recomputing = with_recomputed(kRecomputed);
  const Trained a = train(plain, 16), b = train(recomputing, 16);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.params, b.params) << "weights and batch_norm's running statistics";
  const DeviceMemoryPlan before = planned(plain, 16), after = planned(recomputing, 16);
  EXPECT_EQ(before.total(), a.peak);
  EXPECT_EQ(after.total(), b.peak) << "plan == allocation";
  EXPECT_LT(after.arena, before.arena);
  EXPECT_LT(after.arena_lower_bound, before.arena_lower_bound);
}

TEST(Recompute, ADropoutRecomputedWithAnotherSeedChangesTheBits) {
  // flatten's output is what dense's backward reads; recomputing it
  // recomputes dropout first.
  const Graph plain = residual_blocks(), recomputing = with_recomputed({"drop", "flat"});
  const Trained a = train(plain, 16);
  EXPECT_EQ(train(recomputing, 16).params, a.params);
  const Trained flipped = train(recomputing, 16, uint64_t{1} << 17);
  EXPECT_NE(flipped.params, a.params) << "the recompute's mask must be the forward's";
  EXPECT_EQ(flipped.losses.front(), a.losses.front()) << "the first forward is the same";
}

TEST(Recompute, UnderMicroBatchesAndGradientChunksTheBitsStay) {
  // Two micro-batches of 8 with chunks of 4: sample offsets key the masks.
  const Graph plain = residual_blocks(), recomputing = with_recomputed(kRecomputed);
  auto run = [](const Graph& g) {
    const Program p = build_training_program(g);
    CpuKernelFactory kernels;
    OptimizerConfig opt;
    HostMemory memory("cpu:0", 0);
    Executor ex(g, p, kernels, opt, 2, 7, nullptr, nullptr, nullptr, &memory);
    ex.set_gradient_chunk(4);
    std::vector<float> images(16 * 64), labels(16);
    for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(i * 40503u % 997) / 997.0f;
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 10);
    for (const char* n : {"image", "label"}) ex.set_external(g.find(n));
    ex.reserve(8);
    ex.init_parameters();
    for (int64_t first = 0; first < 16; first += 8) {
      ex.bind_output(g.find("image"), images.data() + first * 64);
      ex.bind_output(g.find("label"), labels.data() + first);
      ex.forward(8, StepInfo{0, first, 16, true});
      ex.backward(8, StepInfo{0, first, 16, true}, first > 0);
    }
    ex.apply_optimizer(1);
    std::vector<std::vector<float>> params;
    for (const Parameter& q : ex.parameters()) ex.read_parameter(q, params.emplace_back());
    return params;
  };
  EXPECT_EQ(run(plain), run(recomputing));
}

}  // namespace
}  // namespace devmap
