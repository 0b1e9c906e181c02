// The arena's offset assignment (core/plan/arena.h) and the tensor buffers'
// lifetimes in a device's step (core/plan/tensor_allocations.h).
#include "core/plan/arena.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/plan/partition.h"
#include "core/plan/tensor_allocations.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

bool overlap_in_time(const ArenaBuffer& a, const ArenaBuffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Every pair alive at once lies apart; every buffer lies in the arena at an
// aligned offset; the arena is at least the lower bound.
void expect_valid(const std::vector<ArenaBuffer>& buffers, const ArenaLayout& layout) {
  ASSERT_EQ(layout.offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(layout.offsets[i] % kArenaAlignment, 0u) << i;
    EXPECT_LE(layout.offsets[i] + buffers[i].bytes, layout.bytes) << i;
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!overlap_in_time(buffers[i], buffers[j]) || buffers[i].bytes == 0 || buffers[j].bytes == 0) continue;
      const bool apart = layout.offsets[i] + buffers[i].bytes <= layout.offsets[j] ||
                         layout.offsets[j] + buffers[j].bytes <= layout.offsets[i];
      EXPECT_TRUE(apart) << i << " and " << j;
    }
  }
  EXPECT_EQ(layout.bytes % kArenaAlignment, 0u);
  EXPECT_GE(layout.bytes, layout.lower_bound);
}

TEST(Arena, BuffersNeverAliveAtOnceShareTheirBytes) {
  const std::vector<ArenaBuffer> buffers{{640, 0, 1}, {640, 2, 3}, {128, 4, 4}};
  const ArenaLayout layout = place_buffers(buffers);
  expect_valid(buffers, layout);
  EXPECT_EQ(layout.offsets, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(layout.bytes, 640u);
  EXPECT_EQ(layout.lower_bound, 640u);
}

TEST(Arena, BuffersAliveAtOnceNeverOverlapAndOneSharedPositionCounts) {
  // The second begins where the first ends: both are alive at position 3.
  const std::vector<ArenaBuffer> buffers{{640, 0, 3}, {640, 3, 5}, {64, 1, 1}};
  const ArenaLayout layout = place_buffers(buffers);
  expect_valid(buffers, layout);
  EXPECT_EQ(layout.bytes, 1280u);
  EXPECT_EQ(layout.lower_bound, 1280u);
  EXPECT_EQ(layout.offsets[0], 0u);
  EXPECT_EQ(layout.offsets[1], 640u);
  EXPECT_EQ(layout.offsets[2], 640u) << "first fit: the gap beside the first buffer";
}

TEST(Arena, SizesRoundUpToTheAlignment) {
  const std::vector<ArenaBuffer> buffers{{4, 0, 0}, {4, 0, 0}};
  const ArenaLayout layout = place_buffers(buffers);
  expect_valid(buffers, layout);
  EXPECT_EQ(layout.bytes, 128u);
  EXPECT_EQ(layout.lower_bound, 128u);
}

// Pseudo-random lifetimes: always valid, and the same list gives the same
// arena.
TEST(Arena, ManyRandomBuffersAreValidAndDeterministic) {
  uint64_t x = 12345;
  auto next = [&x] {
    x = x * 6364136223846793005u + 1442695040888963407u;
    return x >> 33;
  };
  for (int round = 0; round < 20; ++round) {
    std::vector<ArenaBuffer> buffers;
    for (int i = 0; i < 60; ++i) {
      const int first = static_cast<int>(next() % 40);
      buffers.push_back(ArenaBuffer{64 * (1 + next() % 50), first, first + static_cast<int>(next() % 10)});
    }
    const ArenaLayout layout = place_buffers(buffers);
    expect_valid(buffers, layout);
    const ArenaLayout again = place_buffers(buffers);
    EXPECT_EQ(again.offsets, layout.offsets);
    EXPECT_EQ(again.bytes, layout.bytes);
  }
}

TEST(Arena, EmptyListIsAnEmptyArena) {
  const ArenaLayout layout = place_buffers({});
  EXPECT_EQ(layout.bytes, 0u);
  EXPECT_EQ(layout.lower_bound, 0u);
}

const TensorAllocation* find(const TensorArena& a, int tensor) {
  for (const TensorAllocation& t : a.allocations)
    if (t.tensor == tensor) return &t;
  return nullptr;
}

struct DeviceArena {
  Graph g = reference_cnn();
  Program p;
  Partition part;
  std::vector<int> edge_of;
  std::vector<bool> external;
  std::vector<FusedRelu> fused;
  TensorArena arena;

  explicit DeviceArena(bool fuse, bool host = true) {
    for (int i = 0; i < g.size(); ++i) g.node(i).device = "cpu:0";
    p = build_training_program(g);
    part = partition_program(g, p);
    const DeviceProgram& dp = part.programs.at(0);
    edge_of.assign(static_cast<size_t>(p.tensor_count()), -1);
    external.assign(static_cast<size_t>(g.size()), false);
    external[static_cast<size_t>(g.find("image"))] = external[static_cast<size_t>(g.find("label"))] = true;
    if (fuse) fused = fused_relus(FusedReluInputs{&g, &dp.forward, &edge_of, &external, host});
    arena = tensor_arena(
        TensorAllocationInputs{&g, &p, &dp.uses_tensor, &edge_of, &external, host, &fused, &dp.forward, &dp.backward},
        8);
  }
  int forward_count() const { return static_cast<int>(part.programs.at(0).forward.size()); }
  // The position of node's forward or backward instruction.
  int position(const std::string& node, bool backward) const {
    const DeviceProgram& dp = part.programs.at(0);
    const std::vector<Instr>& instrs = backward ? dp.backward : dp.forward;
    for (size_t k = 0; k < instrs.size(); ++k)
      if (instrs[k].node == g.find(node) && instrs[k].kind == (backward ? InstrKind::kBackward : InstrKind::kForward))
        return static_cast<int>(k) + (backward ? forward_count() : 0);
    ADD_FAILURE() << node;
    return -1;
  }
};

// The lifetimes follow what each kernel's backward reads: relu its output,
// conv2d and dense their input, max_pool2d both; flatten neither.
TEST(TensorArena, BuffersLiveFromTheirWriterToTheirLastReaderInTheStep) {
  const DeviceArena d(false);
  const Graph& g = d.g;
  auto life = [&](const std::string& node) { return find(d.arena, g.find(node)); };
  // relu1's output: written by its forward, read by pool1's forward and
  // backward and by its own backward, the last of them.
  ASSERT_NE(life("relu1"), nullptr);
  EXPECT_EQ(life("relu1")->first, d.position("relu1", false));
  EXPECT_EQ(life("relu1")->last, d.position("relu1", true));
  // conv1's output: read by relu1's forward only (relu1's backward reads
  // relu1's output), so it dies there.
  EXPECT_EQ(life("conv1")->first, d.position("conv1", false));
  EXPECT_EQ(life("conv1")->last, d.position("relu1", false));
  // pool2's output: flatten's input (flatten's backward reads nothing), kept
  // for pool2's own backward (max_pool2d compares with its maxima).
  EXPECT_EQ(life("pool2")->last, d.position("pool2", true));
  // relu3's output: the logits' input, read last by their backward; fc1's
  // output dies at relu3's forward.
  EXPECT_EQ(life("relu3")->last, d.position("relu3", true));
  EXPECT_EQ(life("fc1")->last, d.position("relu3", false));
  // flat: fc1's input, read by fc1's backward.
  EXPECT_EQ(life("flat")->last, d.position("fc1", true));
  // An activation gradient: from the backward that writes it to the one
  // that reads it.
  const TensorAllocation* grad = find(d.arena, d.p.grad_of[static_cast<size_t>(g.find("pool1"))]);
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(grad->kind, TensorAllocation::Kind::kActivationGrad);
  EXPECT_EQ(grad->first, d.position("conv2", true));
  EXPECT_EQ(grad->last, d.position("pool1", true));
  // The loss gradient is seeded as the backward pass begins.
  EXPECT_EQ(find(d.arena, d.p.loss_grad)->first, d.forward_count());
  // Sharing: the arena is well below the buffers summed, and at least the bound.
  EXPECT_LT(d.arena.bytes, d.arena.unshared);
  EXPECT_GE(d.arena.bytes, d.arena.lower_bound);
  std::vector<ArenaBuffer> buffers;
  ArenaLayout layout;
  for (const TensorAllocation& a : d.arena.allocations) {
    buffers.push_back(ArenaBuffer{a.bytes, a.first, a.last});
    layout.offsets.push_back(a.offset);
  }
  layout.bytes = d.arena.bytes;
  layout.lower_bound = d.arena.lower_bound;
  expect_valid(buffers, layout);
}

// A fused relu's output is its conv2d's buffer, which then lives until the
// relu's backward reads it.
TEST(TensorArena, AFusedReluKeepsItsConvolutionsBufferUntilItsBackward) {
  const DeviceArena d(true);
  ASSERT_FALSE(d.fused.empty());
  EXPECT_EQ(find(d.arena, d.g.find("relu1")), nullptr);
  const TensorAllocation* conv1 = find(d.arena, d.g.find("conv1"));
  ASSERT_NE(conv1, nullptr);
  EXPECT_EQ(conv1->last, d.position("relu1", true));
}

// A device the CPU cannot address stages the coordinator's tensors: those
// buffers live for the whole step.
TEST(TensorArena, StagingBuffersLiveForTheWholeStep) {
  const DeviceArena d(false, false);
  const TensorAllocation* image = find(d.arena, d.g.find("image"));
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(image->kind, TensorAllocation::Kind::kStaging);
  EXPECT_EQ(image->first, 0);
  EXPECT_EQ(image->last, d.forward_count() + static_cast<int>(d.part.programs.at(0).backward.size()) - 1);
}

}  // namespace
}  // namespace devmap
