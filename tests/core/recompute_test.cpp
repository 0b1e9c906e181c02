// Where the backward pass recomputes an op (core/plan/recompute.h) and the
// lifetimes of a recomputed output's two buffers
// (core/plan/tensor_allocations.h).
#include "core/plan/recompute.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/plan/tensor_allocations.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

int position_of(const std::vector<Instr>& list, InstrKind kind, int node) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].kind == kind && list[i].node == node) return static_cast<int>(i);
  return -1;
}

TEST(Recompute, RunsBeforeTheFirstBackwardReaderAfterItsRecomputedInputs) {
  Graph g = residual_blocks();
  g.node(g.find("bn1")).recomputed = true;
  g.node(g.find("relu1")).recomputed = true;
  const Program p = build_training_program(g);
  const int bn1 = g.find("bn1"), relu1 = g.find("relu1"), conv2 = g.find("conv2");
  const int again_bn1 = position_of(p.backward, InstrKind::kForward, bn1);
  const int again_relu1 = position_of(p.backward, InstrKind::kForward, relu1);
  ASSERT_GE(again_bn1, 0);
  EXPECT_EQ(again_relu1, again_bn1 + 1);
  EXPECT_EQ(position_of(p.backward, InstrKind::kBackward, conv2), again_relu1 + 1) << "conv2's backward reads relu1";
  EXPECT_EQ(std::count_if(p.backward.begin(), p.backward.end(), is_recompute), 2);
  EXPECT_EQ(p.backward[static_cast<size_t>(again_relu1)].in, std::vector<int>{bn1});
  EXPECT_EQ(p.backward[static_cast<size_t>(again_relu1)].out, std::vector<int>{relu1});
}

TEST(Recompute, ARecomputedOutputLivesInTwoBuffersNeitherAcrossTheGap) {
  Graph plain = residual_blocks(), g = residual_blocks();
  for (const char* n : {"bn1", "relu1"}) g.node(g.find(n)).recomputed = true;
  auto arena_of = [](const Graph& graph, const Program& p) {
    std::vector<bool> external(static_cast<size_t>(graph.size()), false);
    external[0] = external[1] = true;
    const std::vector<int> edge_of(static_cast<size_t>(p.tensor_count()), -1);
    const std::vector<bool> all(static_cast<size_t>(p.tensor_count()), true);
    return tensor_arena(
        TensorAllocationInputs{&graph, &p, &all, &edge_of, &external, true, nullptr, &p.forward, &p.backward}, 32);
  };
  const Program pp = build_training_program(plain), p = build_training_program(g);
  const TensorArena before = arena_of(plain, pp), after = arena_of(g, p);
  const int forward_count = static_cast<int>(p.forward.size());
  const int relu1 = g.find("relu1");
  int buffers = 0;
  for (const TensorAllocation& a : after.allocations) {
    if (a.tensor != relu1) continue;
    ++buffers;
    if (a.recomputed)
      EXPECT_GT(a.first, forward_count) << "from its recompute";
    else
      EXPECT_LT(a.last, forward_count) << "to its last forward reader";
  }
  EXPECT_EQ(buffers, 2);
  for (const TensorAllocation& a : before.allocations)
    if (a.tensor == relu1) {
      EXPECT_GT(a.last, forward_count) << "kept for the backward pass";
    }
  EXPECT_LT(after.lower_bound, before.lower_bound);
  // Kept: the activations alive across the gap, counted by their lifetimes;
  // relu1 is among them only without its recompute.
  auto kept_of = [&](const TensorArena& arena) {
    uint64_t bytes = 0;
    int count = 0;
    bool relu1_kept = false;
    for (const TensorAllocation& a : arena.allocations)
      if (a.kind == TensorAllocation::Kind::kActivation && a.first < forward_count && a.last >= forward_count) {
        bytes += a.bytes;
        ++count;
        relu1_kept = relu1_kept || a.tensor == relu1;
      }
    EXPECT_EQ(arena.kept, bytes);
    EXPECT_EQ(arena.kept_buffers, count);
    return relu1_kept;
  };
  EXPECT_TRUE(kept_of(before));
  EXPECT_FALSE(kept_of(after));
  EXPECT_GT(before.kept_buffers, 0);
  EXPECT_LT(after.kept, before.kept);
}

TEST(Recompute, NotAcrossDevicesNorOfWhatTheCoordinatorFeedsNorOfLosses) {
  Graph g = residual_blocks();
  const std::vector<bool> needed(static_cast<size_t>(g.size()), true);
  EXPECT_TRUE(can_recompute(g, needed, g.find("relu1")));
  EXPECT_FALSE(can_recompute(g, needed, g.find("image")));
  EXPECT_FALSE(can_recompute(g, needed, g.find("loss")));
  g.node(g.find("conv2")).device = "cpu:1";
  EXPECT_FALSE(can_recompute(g, needed, g.find("relu1"))) << "conv2 reads it on cpu:1";
  EXPECT_FALSE(can_recompute(g, needed, g.find("bn2"))) << "it reads conv2 from cpu:1";
}

}  // namespace
}  // namespace devmap
