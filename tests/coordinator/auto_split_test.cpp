// auto's split lever (coordinator/plan/auto_split.h): which op it splits,
// with which shares, and when it does not.
#include "coordinator/plan/auto_split.h"

#include <gtest/gtest.h>

#include "coordinator/config/loader.h"

namespace devmap {
namespace {

Config cnn(const std::string& limits, const std::string& fc1_device = "auto") {
  return load_config_text("devices:\n" + limits +
                              "device_map: {default: auto}\n"
                              "model:\n"
                              "  ops:\n"
                              "    - {name: image, op: input, shape: [1, 8, 8]}\n"
                              "    - {name: label, op: labels, classes: 100}\n"
                              "    - {name: flat, op: flatten, inputs: [image]}\n"
                              "    - {name: fc1, op: dense, inputs: [flat], units: 100, device: " +
                              fc1_device +
                              "}\n"
                              "    - {name: loss, op: softmax_cross_entropy, inputs: [fc1, label]}\n",
                          "a.yaml");
}

NoFit fc1_needs(uint64_t bytes) {
  NoFit f;
  f.largest_op = "fc1";
  f.largest_op_bytes = bytes;
  return f;
}

const std::string kLimits = "  cpu:0: {memory_limit: 24MiB}\n  cpu:1: {memory_limit: 40MiB}\n";

using Rates = std::map<std::string, SplitDeviceRate>;
const Rates kSameSpeed{{"cpu:0", {1e10, 5e9}}, {"cpu:1", {1e10, 5e9}}};

// The first split's shares (the devices' speed, within what each limit holds).
std::vector<SplitShare> first_split(const Config& c, const NoFit& f, const Rates& speed = kSameSpeed) {
  const std::vector<ProposedSplit> splits = proposed_splits(c, f, speed);
  return splits.empty() ? std::vector<SplitShare>{} : splits.front().shares;
}

// The split in proportion to the limits.
std::vector<SplitShare> limit_split(const Config& c, const NoFit& f) {
  for (const ProposedSplit& s : proposed_splits(c, f, kSameSpeed))
    if (s.basis == "shares in proportion to the devices' memory_limit") return s.shares;
  return {};
}

// Equal speeds, fc1 48 MiB: cpu:0's 24 MiB holds half of it, so by speed
// each takes half; by limit cpu:0 takes 24/64.
TEST(AutoSplit, SharesFollowTheSpeedWithinTheLimitsThenTheLimits) {
  const std::vector<ProposedSplit> splits = proposed_splits(cnn(kLimits), fc1_needs(uint64_t{48} << 20), kSameSpeed);
  ASSERT_EQ(splits.size(), 2u);
  EXPECT_EQ(split_key_text(splits[0].shares), "{cpu:0: 0.5, cpu:1: 0.5}");
  EXPECT_EQ(splits[0].basis,
            "shares by the devices' speed and the bytes each part moves, within what each memory_limit holds of it");
  ASSERT_EQ(splits[1].shares.size(), 2u);
  EXPECT_EQ(splits[1].shares[0].device, "cpu:0");
  EXPECT_DOUBLE_EQ(splits[1].shares[0].share, 0.375);
  EXPECT_DOUBLE_EQ(splits[1].shares[1].share, 0.625);
  EXPECT_EQ(split_key_text(splits[1].shares), "{cpu:0: 0.375, cpu:1: 0.625}");
  EXPECT_EQ(splits[1].basis, "shares in proportion to the devices' memory_limit");
}

// cpu:1 three times as fast: by speed it would take 0.75 of fc1 (64 MiB),
// more than its 40 MiB holds (0.625): capped there, cpu:0 takes the rest.
TEST(AutoSplit, AFasterDeviceTakesMoreUpToWhatItsLimitHolds) {
  const NoFit f = fc1_needs(uint64_t{64} << 20);
  EXPECT_EQ(split_key_text(first_split(cnn(kLimits), f, {{"cpu:0", {1e10, 0}}, {"cpu:1", {3e10, 0}}})),
            "{cpu:0: 0.375, cpu:1: 0.625}");
  const Config roomy = cnn("  cpu:0: {memory_limit: 60MiB}\n  cpu:1: {memory_limit: 60MiB}\n");
  EXPECT_EQ(split_key_text(first_split(roomy, f, {{"cpu:0", {1e10, 0}}, {"cpu:1", {3e10, 0}}})),
            "{cpu:0: 0.25, cpu:1: 0.75}");
}

// cpu:1 three times as fast but behind a slow link: the bytes its part
// moves (fc1's input in, its share of the output out, and both back as
// gradients) take its time, so it gets less than the 0.75 its speed alone
// would give it; behind a link slower still it gets only what cpu:0's
// limit cannot hold (60 of fc1's 64 MiB: 0.0625).
TEST(AutoSplit, TheBytesAPartMovesWeighItsShare) {
  const NoFit f = fc1_needs(uint64_t{64} << 20);
  const Config roomy = cnn("  cpu:0: {memory_limit: 60MiB}\n  cpu:1: {memory_limit: 60MiB}\n");
  const std::vector<SplitShare> slow = first_split(roomy, f, {{"cpu:0", {1e10, 0}}, {"cpu:1", {3e10, 1e9}}});
  ASSERT_EQ(slow.size(), 2u);
  EXPECT_GT(slow[1].share, 0.25);
  EXPECT_LT(slow[1].share, 0.7);
  EXPECT_DOUBLE_EQ(slow[0].share + slow[1].share, 1.0);
  const std::vector<SplitShare> slower = first_split(roomy, f, {{"cpu:0", {1e10, 0}}, {"cpu:1", {3e10, 1e6}}});
  EXPECT_EQ(split_key_text(slower), "{cpu:0: 0.9375, cpu:1: 0.0625}");
}

// fc1 holds 26000 bytes of parameters (6400 weights and 100 biases), so
// training stages 52000 for the whole op: cpu:0's half, 26000, in parts of
// at most an eighth of its 64 KiB (8192 bytes) is 4 parts; cpu:1 keeps its
// parameters on the device and gets one part.
TEST(AutoSplit, AnOffloadedDeviceGetsItsShareAsPartsThatStageInAQuarterOfItsLimit) {
  const Config c = cnn("  cpu:0: {memory_limit: 64KiB, offload: parameters}\n  cpu:1: {memory_limit: 64KiB}\n");
  const std::vector<SplitShare> shares = limit_split(c, fc1_needs(uint64_t{1} << 20));
  EXPECT_EQ(split_key_text(shares), "{cpu:0: [0.125, 0.125, 0.125, 0.125], cpu:1: 0.5}");
  const std::vector<SplitShare> both =
      limit_split(cnn("  cpu:0: {memory_limit: 64KiB, offload: parameters}\n  cpu:1: {memory_limit: 192KiB, offload: "
                      "parameters}\n"),
                  fc1_needs(uint64_t{1} << 20));
  // 1/4 of 52000 in 8192-byte parts: 2; 3/4 in 24576-byte parts: 2.
  EXPECT_EQ(split_key_text(both), "{cpu:0: [0.125, 0.125], cpu:1: [0.375, 0.375]}");
}

TEST(AutoSplit, KeyTextListsSeveralPartsOnOneDevice) {
  const std::vector<SplitShare> shares{{"cpu:0", 0.25}, {"cpu:0", 0.25}, {"cpu:1", 0.125}, {"cpu:1", 0.375}};
  EXPECT_EQ(split_key_text(shares), "{cpu:0: [0.25, 0.25], cpu:1: [0.125, 0.375]}");
  EXPECT_EQ(split_key_text({{"cpu:1", 0.5}, {"cpu:0", 0.25}, {"cpu:0", 0.25}}), "{cpu:1: 0.5, cpu:0: [0.25, 0.25]}");
}

TEST(AutoSplit, NoSplitWhereTheOpFitsADeviceIsPinnedADeviceHasNoLimitOrReplicasRun) {
  EXPECT_TRUE(first_split(cnn(kLimits), fc1_needs(uint64_t{30} << 20)).empty()) << "fits cpu:1";
  EXPECT_TRUE(first_split(cnn(kLimits, "cpu:0"), fc1_needs(uint64_t{48} << 20)).empty()) << "pinned";
  EXPECT_TRUE(first_split(cnn("  cpu:0: {memory_limit: 24MiB}\n  cpu:1: {}\n"), fc1_needs(uint64_t{48} << 20)).empty())
      << "cpu:1 has no limit";
  Config replicated = cnn(kLimits);
  replicated.data_parallel.replicas = 2;
  EXPECT_TRUE(first_split(replicated, fc1_needs(uint64_t{48} << 20)).empty()) << "splits and replicas: not together";
  NoFit flat = fc1_needs(uint64_t{48} << 20);
  flat.largest_op = "flat";
  EXPECT_TRUE(first_split(cnn(kLimits), flat).empty()) << "flatten cannot split";
}

TEST(AutoSplit, TheSplitConfigHoldsThePartsAndTheirReasons) {
  Config c = cnn(kLimits);
  apply_split(c, "fc1", {{"cpu:0", 0.375}, {"cpu:1", 0.625}});
  ASSERT_EQ(c.placement_reason.size(), static_cast<size_t>(c.graph.size()));
  const int p0 = c.graph.find("fc1/part0"), p1 = c.graph.find("fc1/part1"), fc1 = c.graph.find("fc1");
  ASSERT_GE(p0, 0);
  ASSERT_GE(p1, 0);
  EXPECT_EQ(c.graph.node(p0).attrs.get_int("units"), 38);
  EXPECT_EQ(c.graph.node(p1).device, "cpu:1");
  EXPECT_EQ(c.graph.node(fc1).op(), "concat");
  EXPECT_EQ(c.graph.node(fc1).device, "auto") << "where the loss runs: the planner's to place";
  EXPECT_EQ(c.placement_reason[static_cast<size_t>(p0)], "auto split");
  EXPECT_EQ(c.placement_reason[static_cast<size_t>(fc1)], Config::kPlacedBySplitConsumer);
}

}  // namespace
}  // namespace devmap
