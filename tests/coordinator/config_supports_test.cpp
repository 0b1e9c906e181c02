// Placement asks each op's device whether it runs the op
// (check_placed_ops_supported): an op on a device kind without its kernel
// is a config error at the op, naming the op, the device and what that
// kind runs.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "coordinator/config/placement.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;

const std::string kSplit =
    "devices: {cpu:0: {}, gpu:0: {}}\n"                                       // 1
    "device_map: {default: cpu:0}\n"                                          // 2
    "model:\n"                                                                // 3
    "  ops:\n"                                                                // 4
    "    - {name: image, op: input, shape: [1, 4, 4]}\n"                      // 5
    "    - {name: label, op: labels, classes: 3}\n"                           // 6
    "    - {name: flat, op: flatten, inputs: [image]}\n"                      // 7
    "    - {name: fc, op: dense, inputs: [flat], units: 8, device: gpu:0}\n"  // 8
    "    - {name: act, op: relu, inputs: [fc], device: gpu:0}\n"              // 9
    "    - {name: logits, op: dense, inputs: [act], units: 3}\n"              // 10
    "    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}\n";

// As if gpu devices had no relu kernel.
bool no_gpu_relu(const OpSchema& schema, DeviceKind kind) {
  return !(kind == DeviceKind::kGpu && schema.name == "relu");
}

TEST(ConfigSupports, EveryShippedOpRunsOnBothKinds) {
  const Config c = load_config_text(kSplit, "split.yaml");
  EXPECT_EQ(error_of([&] { check_placed_ops_supported(c.graph, c.devices, c.placement_reason); }), "(no error)");
}

TEST(ConfigSupports, AnOpTheDeviceLacksIsAnErrorAtTheOp) {
  const Config c = load_config_text(kSplit, "split.yaml");
  std::string gpu_ops;
  for (const std::string& op : known_op_names())
    if (op != "relu") gpu_ops += (gpu_ops.empty() ? "" : ", ") + op;
  EXPECT_EQ(error_of([&] { check_placed_ops_supported(c.graph, c.devices, c.placement_reason, no_gpu_relu); }),
            "split.yaml:9:7: op 'act' (relu) is placed on 'gpu:0' (by op's device), but gpu devices have no relu "
            "kernel (they run: " +
                gpu_ops + "); place it on a cpu device");
}

TEST(ConfigSupports, EverySchemaDeclaresWhereItRuns) {
  for (const std::string& op : known_op_names()) EXPECT_FALSE(find_op(op)->device_kinds.empty()) << op;
}

// The default check asks the schema's device_kinds.
TEST(ConfigSupports, ASchemaWithoutTheKindIsRefused) {
  Config c = load_config_text(kSplit, "split.yaml");
  OpSchema cpu_relu = *find_op("relu");
  cpu_relu.device_kinds = {DeviceKind::kCpu};
  c.graph.node(c.graph.find("act")).schema = &cpu_relu;
  const std::string msg = error_of([&] { check_placed_ops_supported(c.graph, c.devices, c.placement_reason); });
  EXPECT_NE(msg.find("op 'act' (relu) is placed on 'gpu:0' (by op's device), but gpu devices have no relu kernel"),
            std::string::npos)
      << msg;
}

TEST(ConfigSupports, NoOtherKindMeansNoAdvice) {
  const Config c = load_config_text(kSplit, "split.yaml");
  const SupportsOp nowhere = [](const OpSchema& s, DeviceKind) { return s.name != "relu"; };
  const std::string msg =
      error_of([&] { check_placed_ops_supported(c.graph, c.devices, c.placement_reason, nowhere); });
  EXPECT_NE(msg.find("gpu devices have no relu kernel"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("place it on"), std::string::npos) << msg;
}

}  // namespace
}  // namespace devmap
