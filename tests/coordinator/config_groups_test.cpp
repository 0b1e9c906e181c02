// Groups in model.ops: nested scopes that flatten to ops in document order.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;

const std::string kGrouped =
    "devices: {cpu:0: {}, cpu:1: {}}\n"                                        // 1
    "model:\n"                                                                 // 2
    "  ops:\n"                                                                 // 3
    "    - {name: image, op: input, shape: [1, 4, 4]}\n"                       // 4
    "    - group: body\n"                                                      // 5
    "      ops:\n"                                                             // 6
    "        - {name: label, op: labels, classes: 3}\n"                        // 7
    "        - group: tower\n"                                                 // 8
    "          device: cpu:1\n"                                                // 9
    "          ops:\n"                                                         // 10
    "            - {name: flat, op: flatten, inputs: [image]}\n"               // 11
    "            - {name: fc, op: dense, inputs: [flat], units: 3}\n"          // 12
    "        - {name: relu, op: relu, inputs: [fc]}\n"                         // 13
    "    - {name: loss, op: softmax_cross_entropy, inputs: [relu, label]}\n";  // 14

std::vector<std::string> names(const Config& c) {
  std::vector<std::string> out;
  for (const Node& n : c.graph.nodes()) out.push_back(n.name);
  return out;
}

TEST(Groups, FlattenInDocumentOrderAndKeepOpNames) {
  const Config c = load_config_text(kGrouped, "g.yaml");
  EXPECT_EQ(names(c), (std::vector<std::string>{"image", "label", "flat", "fc", "relu", "loss"}));
  EXPECT_EQ(c.graph.node(c.graph.find("fc")).inputs, std::vector<int>{c.graph.find("flat")});
  EXPECT_EQ(c.graph.node(c.graph.find("fc")).loc.line, 12);
  EXPECT_EQ(c.graph.node(c.graph.find("fc")).device, "cpu:1");
  EXPECT_EQ(c.graph.node(c.graph.find("relu")).device, "cpu:0");  // body names no device
  EXPECT_EQ(c.graph.node(c.graph.find("label")).device, "cpu:0");
}

TEST(Groups, OverridesReachOpsAndGroupsAtAnyDepth) {
  const Config c = load_config_text(
      kGrouped, "g.yaml", {"model.ops.fc.device=cpu:0", "model.ops.body.device=cpu:1", "model.ops.label.classes=3"});
  EXPECT_EQ(c.graph.node(c.graph.find("fc")).device, "cpu:0");
  EXPECT_EQ(c.placement_reason[static_cast<size_t>(c.graph.find("fc"))], "op's device");
  EXPECT_EQ(c.graph.node(c.graph.find("flat")).device, "cpu:1");  // tower
  EXPECT_EQ(c.graph.node(c.graph.find("relu")).device, "cpu:1");  // now body
  EXPECT_EQ(c.placement_reason[static_cast<size_t>(c.graph.find("relu"))], "group 'body'");
  EXPECT_EQ(c.graph.node(c.graph.find("image")).device, "cpu:0");

  auto err = [](const std::string& set) { return error_of([&] { load_config_text(kGrouped, "g.yaml", {set}); }); };
  EXPECT_EQ(err("model.ops.tower.units=3"),
            "--set model.ops.tower.units=3: unknown key 'units' in group 'tower' (valid: group, device, ops)");
  EXPECT_EQ(err("model.ops.fc.unit=3"),
            "--set model.ops.fc.unit=3: unknown key 'unit' in op 'fc' (dense) (did you mean 'units'?)");
  EXPECT_EQ(err("model.ops.tower.device=cpu:5"),
            "--set model.ops.tower.device=cpu:5: group 'tower' is placed on 'cpu:5', which is not declared in devices "
            "(declared: cpu:0, cpu:1)");
  EXPECT_EQ(err("model.ops.towr.device=cpu:1"),
            "--set model.ops.towr.device=cpu:1: model.ops has no op or group named 'towr' (ops: image, label, flat, "
            "fc, relu, loss; groups: body, tower)");
}

TEST(Groups, MistakesInAGroup) {
  auto err = [](const std::string& group) {
    const std::string text =
        "model:\n"
        "  ops:\n"
        "    - {name: image, op: input, shape: [1, 4, 4]}\n" +
        group;
    return error_of([&] { load_config_text(text, "g.yaml"); });
  };
  EXPECT_EQ(err("    - {group: g, ops: []}\n"), "g.yaml:4:23: group 'g' ops must not be empty: list the group's ops");
  EXPECT_EQ(err("    - {group: g, ops: x}\n"), "g.yaml:4:23: group 'g' ops must be a list of ops and groups, got 'x'");
  EXPECT_EQ(err("    - {group: g, op: relu, ops: []}\n"),
            "g.yaml:4:18: unknown key 'op' in group 'g' (did you mean 'ops'?)");
  EXPECT_EQ(err("    - {group: [g], ops: []}\n"), "g.yaml:4:15: model.ops entry 2 group must be a name, got a list");
  EXPECT_EQ(err("    - {group: 2nd, ops: []}\n"),
            "g.yaml:4:15: group name '2nd' is not valid: use letters, digits, '_', '.' and '-', starting with a "
            "letter or '_'");
  EXPECT_EQ(err("    - {group: g, device: tpu:0, ops: []}\n"),
            "g.yaml:4:26: group 'g': bad device name 'tpu:0' (expected cpu:N or gpu:N, e.g. cpu:0)");
  EXPECT_EQ(err("    - {group: g, ops: [relu]}\n"),
            "g.yaml:4:24: group 'g' ops entry 1 must be a mapping such as {name: relu1, op: relu, inputs: [conv1]}, "
            "got 'relu'");
  EXPECT_EQ(err("    - {group: g, ops: [{op: relu}]}\n"),
            "g.yaml:4:24: group 'g' ops entry 1 is missing required key 'name'");
  EXPECT_EQ(err("    - {group: g, ops: [{name: image, op: relu, inputs: [image]}]}\n"),
            "g.yaml:4:31: duplicate op name 'image' (first defined at line 3)");
  EXPECT_EQ(
      err("    - {group: g, ops: [{name: r, op: relu, inputs: [s]}]}\n    - {name: s, op: relu, inputs: [image]}\n"),
      "g.yaml:4:53: op 'r' input 's' names an op defined after it (line 5): an op's inputs must be defined "
      "before it");
}

TEST(Groups, NestAsDeepAsTheYamlLimitAllows) {
  auto nested = [](int depth) {
    std::string ops = "[{name: image, op: input, shape: [4]}]";
    for (int i = depth; i-- > 0;) ops = "[{group: g" + std::to_string(i) + ", device: cpu:0, ops: " + ops + "}]";
    return "job: predict\nmodel: {ops: " + ops + "}\n";
  };
  const Config c = load_config_text(nested(12), "n.yaml");
  EXPECT_EQ(c.placement_reason[0], "group 'g11'");  // the innermost
  EXPECT_NE(error_of([&] { load_config_text(nested(20), "n.yaml"); }).find("nested deeper than 32 levels"),
            std::string::npos);
}

}  // namespace
}  // namespace devmap
