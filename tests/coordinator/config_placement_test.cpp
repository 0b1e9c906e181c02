// Where each op runs and why: the precedence docs/CONFIG.md states,
// device_map.place > the op's own device > the innermost group's device >
// device_map.default, each level tested against the next.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;

// Four devices so that every level places its ops somewhere the next lower
// level would not.
const std::string kEveryLevel =
    "devices: {cpu:0: {}, cpu:1: {}, cpu:2: {}, cpu:3: {}}\n"                              // 1
    "device_map:\n"                                                                        // 2
    "  default: cpu:1\n"                                                                   // 3
    "  place:\n"                                                                           // 4
    "    \"fc[12]\": cpu:0\n"                                                              // 5
    "    \"fc*\": cpu:2\n"                                                                 // 6
    "model:\n"                                                                             // 7
    "  ops:\n"                                                                             // 8
    "    - {name: image, op: input, shape: [1, 4, 4]}\n"                                   // 9
    "    - {name: label, op: labels, classes: 3}\n"                                        // 10
    "    - group: outer\n"                                                                 // 11
    "      device: cpu:2\n"                                                                // 12
    "      ops:\n"                                                                         // 13
    "        - {name: flat, op: flatten, inputs: [image]}\n"                               // 14
    "        - group: inner\n"                                                             // 15
    "          device: cpu:3\n"                                                            // 16
    "          ops:\n"                                                                     // 17
    "            - {name: fc1, op: dense, inputs: [flat], units: 8, device: cpu:1}\n"      // 18
    "            - {name: relu1, op: relu, inputs: [fc1]}\n"                               // 19
    "            - {name: hidden, op: dense, inputs: [relu1], units: 8, device: cpu:0}\n"  // 20
    "        - group: scope\n"                                                             // 21
    "          ops:\n"                                                                     // 22
    "            - {name: relu2, op: relu, inputs: [hidden]}\n"                            // 23
    "        - {name: fc2, op: dense, inputs: [relu2], units: 8}\n"                        // 24
    "    - {name: fc3, op: dense, inputs: [fc2], units: 8, device: cpu:3}\n"               // 25
    "    - {name: logits, op: dense, inputs: [fc3], units: 3}\n"                           // 26
    "    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}\n";            // 27

struct Placed {
  std::string name, device, reason;
  bool operator==(const Placed&) const = default;
};

void PrintTo(const Placed& p, std::ostream* out) {
  *out << p.name << " on " << p.device << " by " << p.reason;
}

std::vector<Placed> placement(const Config& c) {
  EXPECT_EQ(c.placement_reason.size(), c.graph.nodes().size());
  std::vector<Placed> out;
  for (int i = 0; i < c.graph.size(); ++i)
    out.push_back({c.graph.node(i).name, c.graph.node(i).device, c.placement_reason.at(static_cast<size_t>(i))});
  return out;
}

TEST(Placement, EveryLevelOfThePrecedence) {
  const Config c = load_config_text(kEveryLevel, "p.yaml");
  const std::vector<Placed> want = {
      {"image", "cpu:1", "device_map.default"},  // 4: nothing else applies
      {"label", "cpu:1", "device_map.default"},
      {"flat", "cpu:2", "group 'outer'"},                          // 3 over 4
      {"fc1", "cpu:0", "device_map.place 'fc[12]' (p.yaml:5:5)"},  // 1 over 2 (its own cpu:1) and 3 (inner's cpu:3)
      {"relu1", "cpu:3", "group 'inner'"},                         // the innermost group over outer's cpu:2
      {"hidden", "cpu:0", "op's device"},                          // 2 over 3 (inner's cpu:3)
      {"relu2", "cpu:2", "group 'outer'"},  // group scope names no device: the enclosing outer's applies
      {"fc2", "cpu:0", "device_map.place 'fc[12]' (p.yaml:5:5)"},  // the first matching pattern, not fc*
      {"fc3", "cpu:2", "device_map.place 'fc*' (p.yaml:6:5)"},     // 1 over 2 (its own cpu:3)
      {"logits", "cpu:1", "device_map.default"},
      {"loss", "cpu:1", "device_map.default"},
  };
  EXPECT_EQ(placement(c), want);  // also: the graph holds the ops in document order
  ASSERT_EQ(c.place.size(), 2u);
  EXPECT_EQ(c.place[0].pattern, "fc[12]");
  EXPECT_EQ(c.place[0].device, "cpu:0");
  EXPECT_EQ(c.place[0].loc.line, 5);
  EXPECT_EQ(c.place[1].pattern, "fc*");
  EXPECT_EQ(c.default_device, "cpu:1");
}

TEST(Placement, WithoutTheOtherLevelsEachLevelStillPlaces) {
  // Drop the patterns: fc1 and fc3 fall back to their own devices, fc2 to outer's.
  std::string text = kEveryLevel;
  text.replace(text.find("  place:\n"), text.find("model:") - text.find("  place:\n"), "");
  const Config c = load_config_text(text, "p.yaml");
  EXPECT_EQ(c.graph.node(c.graph.find("fc1")).device, "cpu:1");
  EXPECT_EQ(c.graph.node(c.graph.find("fc3")).device, "cpu:3");
  EXPECT_EQ(c.graph.node(c.graph.find("fc2")).device, "cpu:2");
  EXPECT_EQ(c.placement_reason[static_cast<size_t>(c.graph.find("fc2"))], "group 'outer'");
  EXPECT_TRUE(c.place.empty());
}

TEST(Placement, TheDefaultIsTheFirstDeclaredDeviceOrCpu0) {
  const std::string model = test::kMinimalModel;
  const Config implicit = load_config_text(model, "d.yaml");
  for (const Node& n : implicit.graph.nodes()) EXPECT_EQ(n.device, "cpu:0") << n.name;
  EXPECT_EQ(implicit.placement_reason, std::vector<std::string>(5, "device_map.default"));
  const Config first = load_config_text(model + "devices: {cpu:2: {}, cpu:1: {}}\n", "d.yaml");
  for (const Node& n : first.graph.nodes()) EXPECT_EQ(n.device, "cpu:2") << n.name;
}

TEST(Placement, PatternsAreTriedInFileOrderNotSorted) {
  const std::string base = test::kMinimalModel + "devices: {cpu:0: {}, cpu:1: {}, cpu:2: {}}\n";
  // yaml-cpp keeps a mapping's keys in document order: "z*"-like keys
  // written first are tried first.
  const Config named_first =
      load_config_text(base + "device_map:\n  place:\n    logits: cpu:1\n    \"*\": cpu:2\n", "o.yaml");
  for (const Node& n : named_first.graph.nodes()) EXPECT_EQ(n.device, n.name == "logits" ? "cpu:1" : "cpu:2");
  // "*" first shadows "logits", which still matches an op and so is no error.
  const Config star_first =
      load_config_text(base + "device_map:\n  place:\n    \"*\": cpu:2\n    logits: cpu:1\n", "o.yaml");
  for (const Node& n : star_first.graph.nodes()) EXPECT_EQ(n.device, "cpu:2") << n.name;
  EXPECT_EQ(star_first.place[0].pattern, "*");
  EXPECT_EQ(star_first.place[1].pattern, "logits");
}

TEST(Placement, InputOpsArePlacedLikeAnyOp) {
  const std::string text = test::kMinimalModel +
                           "devices: {cpu:0: {}, cpu:1: {}}\n"
                           "device_map: {place: {\"[il]*\": cpu:1}}\n";
  const Config c = load_config_text(text, "i.yaml");
  EXPECT_EQ(c.graph.node(c.graph.find("image")).device, "cpu:1");
  EXPECT_EQ(c.graph.node(c.graph.find("label")).device, "cpu:1");
  EXPECT_EQ(c.graph.node(c.graph.find("logits")).device, "cpu:1");
  EXPECT_EQ(c.graph.node(c.graph.find("flat")).device, "cpu:0");
}

TEST(Placement, OverridesOfPatternsAppendOrReplaceInPlace) {
  // A new pattern comes after the file's: fc* keeps fc1 and fc2 on cpu:0.
  const Config appended = load_config_text(kEveryLevel, "p.yaml", {"device_map.place.*=cpu:3"});
  ASSERT_EQ(appended.place.size(), 3u);
  EXPECT_EQ(appended.place[2].pattern, "*");
  const std::vector<Placed> head = {
      {"image", "cpu:3", "device_map.place '*' (--set device_map.place.*=cpu:3)"},
      {"label", "cpu:3", "device_map.place '*' (--set device_map.place.*=cpu:3)"},
      {"flat", "cpu:3", "device_map.place '*' (--set device_map.place.*=cpu:3)"},
      {"fc1", "cpu:0", "device_map.place 'fc[12]' (p.yaml:5:5)"},
  };
  const std::vector<Placed> all = placement(appended);
  EXPECT_EQ(std::vector<Placed>(all.begin(), all.begin() + 4), head);
  EXPECT_EQ(appended.place[2].loc.file, "--set device_map.place.*=cpu:3");

  // An existing pattern keeps its place in the order and takes the new device.
  const Config replaced = load_config_text(kEveryLevel, "p.yaml", {"device_map.place.fc[12]=cpu:3"});
  ASSERT_EQ(replaced.place.size(), 2u);
  EXPECT_EQ(replaced.place[0].pattern, "fc[12]");
  EXPECT_EQ(replaced.place[0].device, "cpu:3");
  EXPECT_EQ(replaced.graph.node(replaced.graph.find("fc2")).device, "cpu:3");
  EXPECT_EQ(replaced.graph.node(replaced.graph.find("fc3")).device, "cpu:2");
}

TEST(Placement, OverridesCreateThePlaceMappingAndTakeDottedPatterns) {
  const std::string text =
      "job: predict\n"
      "devices: {cpu:0: {}, cpu:1: {}}\n"
      "model:\n"
      "  ops:\n"
      "    - {name: image, op: input, shape: [4]}\n"
      "    - {name: block.fc, op: dense, inputs: [image], units: 2}\n"
      "    - {name: block.out, op: dense, inputs: [block.fc], units: 2}\n";
  const Config c = load_config_text(text, "d.yaml", {"device_map.place.block.*=cpu:1"});
  ASSERT_EQ(c.place.size(), 1u);
  EXPECT_EQ(c.place[0].pattern, "block.*");
  EXPECT_EQ(c.graph.node(1).device, "cpu:1");
  EXPECT_EQ(c.graph.node(2).device, "cpu:1");
  EXPECT_EQ(c.graph.node(0).device, "cpu:0");
  const Config whole = load_config_text(text, "d.yaml", {"device_map.place={block.out: cpu:1}"});
  EXPECT_EQ(whole.graph.node(2).device, "cpu:1");
  EXPECT_EQ(whole.graph.node(1).device, "cpu:0");
}

TEST(Placement, OverrideMistakesNameTheOverride) {
  auto err = [](const std::vector<std::string>& overrides) {
    return error_of([&] { load_config_text(kEveryLevel, "p.yaml", overrides); });
  };
  EXPECT_EQ(err({"device_map.place.dense*=cpu:1"}),
            "--set device_map.place.dense*=cpu:1: device_map.place pattern 'dense*' matches no op (ops: image, label, "
            "flat, fc1, relu1, hidden, relu2, fc2, fc3, logits, ...)");
  EXPECT_EQ(err({"device_map.place.fc*=cpu:9"}),
            "--set device_map.place.fc*=cpu:9: device_map.place 'fc*' places ops on 'cpu:9', which is not declared in "
            "devices (declared: cpu:0, cpu:1, cpu:2, cpu:3)");
  EXPECT_EQ(err({"device_map.place.fc[1=cpu:1"}),
            "--set device_map.place.fc[1=cpu:1: device_map.place pattern 'fc[1' is malformed: '[' at character 3 has "
            "no closing ']'");
  EXPECT_EQ(err({"device_map.place=[fc1]"}),
            "--set device_map.place=[fc1]: device_map.place must be a mapping from op-name patterns to devices, such "
            "as {\"fc*\": cpu:1}, got a list");
  EXPECT_EQ(err({"device_map.places.fc1=cpu:1"}),
            "--set device_map.places.fc1=cpu:1: unknown key 'places' in device_map (did you mean 'place'?)");
}

TEST(Placement, PlaceMistakesInTheFile) {
  const std::string base = test::kMinimalModel + "devices: {cpu:0: {}, cpu:1: {}}\n";
  auto err = [&](const std::string& device_map) {
    return error_of([&] { load_config_text(base + device_map, "m.yaml"); });
  };
  EXPECT_EQ(err("device_map: {place: [fc1]}\n"),
            "m.yaml:9:21: device_map.place must be a mapping from op-name patterns to devices, such as {\"fc*\": "
            "cpu:1}, got a list");
  EXPECT_EQ(err("device_map:\n  place:\n    logits:\n"),
            "m.yaml:11:5: device_map.place 'logits' must be a device name such as cpu:0, got an empty value");
  EXPECT_EQ(err("device_map: {place: {logits: [cpu:1]}}\n"),
            "m.yaml:9:30: device_map.place 'logits' must be a device name such as cpu:0, got a list");
  EXPECT_EQ(err("device_map: {place: {logits: tpu:1}}\n"),
            "m.yaml:9:30: device_map.place 'logits': bad device name 'tpu:1' (expected cpu:N or gpu:N, e.g. cpu:0)");
  EXPECT_EQ(err("device_map: {place: {logit: cpu:1}}\n"),
            "m.yaml:9:22: device_map.place 'logit' names no op (did you mean 'logits'?)");
  EXPECT_EQ(err("device_map: {place: {softmax: cpu:1}}\n"),
            "m.yaml:9:22: device_map.place 'softmax' names no op (ops: image, label, flat, logits, loss)");
  EXPECT_EQ(err("device_map: {default: [cpu:1]}\n"),
            "m.yaml:9:23: device_map.default must be a device name such as cpu:0, got a list");
  EXPECT_NO_THROW(load_config_text(base + "device_map: {place: }\n", "m.yaml"));  // empty: no patterns
}

}  // namespace
}  // namespace devmap
