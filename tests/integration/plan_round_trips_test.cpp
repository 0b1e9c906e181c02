// `plan --json` names the round trips as the text plan does: the hand-made
// map of the README (fc1 and logits alone on cpu:1) strands relu3, loss
// and acc on cpu:0; the shipped split config has none.
#include <gtest/gtest.h>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kSplit = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml";

std::string plan_json(std::vector<std::string> extra) {
  TempDir dir;
  std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN, "plan", kSplit, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProcessResult r = run_process(args, dir.path(), {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(PlanRoundTrips, JsonNamesTheStrandedOpsAndTheMovesThatAvoidThem) {
  const std::string json = plan_json({"--set", "device_map.place={}", "--set", "device_map.place.fc1=cpu:1", "--set",
                                      "device_map.place.logits=cpu:1"});
  EXPECT_NE(json.find("{\"op\":\"relu3\",\"device\":\"cpu:0\",\"neighbours_device\":\"cpu:1\",\"inputs\":[\"fc1\"],"
                      "\"consumers\":[\"logits\"],\"move\":true}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"op\":\"fc1\",\"device\":\"cpu:1\",\"neighbours_device\":\"cpu:0\",\"inputs\":[\"flat\"],"
                      "\"consumers\":[\"relu3\"],\"move\":false}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"edges\":8,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"edges_after\":2,"), std::string::npos) << json;
}

TEST(PlanRoundTrips, JsonOfASplitWithoutRoundTripsHasNone) {
  const std::string json = plan_json({});
  EXPECT_NE(json.find("\"round_trips\":{\"ops\":[],\"edges\":0,"), std::string::npos) << json;
}

}  // namespace
}  // namespace devmap::testing
