// Round trips (core/plan/round_trips.h, coordinator/plan/round_trips_report.h):
// the reference model with only its dense layers moved to cpu:1 leaves
// relu3, the loss and the accuracy on cpu:0, so tensors bounce between the
// two; the plan names them and the map that avoids it, moving the ops the
// user left to the default, never those the user placed.
#include "core/plan/round_trips.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "coordinator/config/loader.h"
#include "coordinator/plan/round_trips_report.h"
#include "core/plan/program.h"

namespace devmap {
namespace {

const std::string kReference = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml";

// The split config with device_map.place replaced by `place` rules.
Config split_with(const std::vector<std::string>& place) {
  std::vector<std::string> overrides = {"device_map.place={}"};
  for (const std::string& rule : place) overrides.push_back("device_map.place." + rule);
  return load_config(kReference, overrides);
}

std::string report(const Config& config, int64_t batch = 64) {
  const Program program = build_training_program(config.graph);
  std::ostringstream os;
  print_round_trips(find_round_trips(config.graph, program, config.placed_by_user()), config.graph, batch, "", os);
  return os.str();
}

TEST(RoundTrips, DenseLayersAloneOnAnotherDeviceBounceTheirNeighboursTensors) {
  const Config config = split_with({"fc1=cpu:1", "logits=cpu:1"});
  const Program program = build_training_program(config.graph);
  const RoundTrips trips = find_round_trips(config.graph, program, config.placed_by_user());
  std::vector<std::string> stranded, moved;
  for (const StrandedOp& op : trips.ops) stranded.push_back(config.graph.node(op.node).name);
  for (size_t k : trips.moves) moved.push_back(config.graph.node(trips.ops[k].node).name);
  EXPECT_EQ(stranded, (std::vector<std::string>{"fc1", "relu3", "logits", "loss", "acc"}));
  EXPECT_EQ(moved, (std::vector<std::string>{"relu3", "loss", "acc"})) << "the user placed fc1 and logits";
  EXPECT_EQ(trips.edges, 8);
  EXPECT_EQ(trips.edges_after, 2) << "flat and its gradient still cross: that split is the user's";
  EXPECT_EQ(trips.bytes_per_sample, 2 * 4 * (3136 + 1024 + 1024 + 10));
  EXPECT_EQ(trips.bytes_per_sample_after, 2 * 4 * 3136);
  EXPECT_EQ(report(config),
            "round trips: relu3, loss and acc run on cpu:0, but every op they exchange tensors with runs on cpu:1\n"
            "  fc1 (cpu:1) -> relu3 (cpu:0) -> logits (cpu:1)\n"
            "  logits (cpu:1) -> loss (cpu:0)\n"
            "  logits (cpu:1) -> acc (cpu:0)\n"
            "  8 cut edges move 2.54 MiB a step; with relu3, loss and acc placed beside their neighbours, 2 cut "
            "edges would move 1.53 MiB\n"
            "  to place relu3, loss and acc on cpu:1: give each `device: cpu:1`, or add them to a device_map.place "
            "rule for cpu:1\n");
}

TEST(RoundTrips, ASplitThatCutsOnceHasNone) {
  EXPECT_EQ(report(load_config(kReference)), "") << "the split config moves flat and everything after it";
  EXPECT_EQ(report(split_with({"conv1=cpu:1"})), "")
      << "conv1 reads only the image the coordinator feeds: a split starts there";
}

TEST(RoundTrips, OpsTheUserPlacedAreMovedWhenNothingElseWould) {
  const Config config = split_with({"relu3=cpu:1"});
  const RoundTrips trips =
      find_round_trips(config.graph, build_training_program(config.graph), config.placed_by_user());
  ASSERT_EQ(trips.ops.size(), 1u);
  EXPECT_EQ(config.graph.node(trips.ops[0].node).name, "relu3");
  ASSERT_EQ(trips.moves.size(), 1u) << "relu3 is the user's, but the only stranded op";
  EXPECT_EQ(trips.edges_after, 0);
  EXPECT_NE(report(config).find("no cut edge would move anything"), std::string::npos) << report(config);
}

}  // namespace
}  // namespace devmap
