// `coordinator plan --emit-map` writes the config with its placement as a
// plain device map that trains with the same bits as the config itself;
// `--dot` draws the placement (DOT text, or SVG through Graphviz).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";

TEST(PlanOutputs, AnEmittedMapTrainsWithTheBitsOfItsConfig) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  const std::string config = kConfigs + "fashion_mnist_cnn_3way.yaml", map = dir.path() + "/map.yaml";
  const std::vector<std::string> small = {"--set", "data.train_limit=320", "--set", "data.test_limit=64",
                                          "--set", "train.batch_size=32",  "--set", "train.max_steps=8"};
  std::vector<std::string> plan = {DEVMAP_COORDINATOR_BIN,          "plan", config, "--emit-map", map, "--set",
                                   "train.pipeline.micro_batches=2"};
  plan.insert(plan.end(), small.begin(), small.end());
  const ProcessResult p = run_process(plan, dir.path());
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string text = read_file(map);
  EXPECT_NE(text.find("device_map:\n  default: cpu:0\n  place:\n    conv2: cpu:1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("micro_batches: 2"), std::string::npos) << text;
  auto train = [&](const std::string& cfg, const std::string& name, bool extra) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                     "train",
                                     cfg,
                                     "--metrics",
                                     dir.path() + "/" + name,
                                     "--log-every",
                                     "1",
                                     "--checkpoint",
                                     dir.path() + "/" + name + ".safetensors"};
    if (extra) {
      args.insert(args.end(), small.begin(), small.end());
      args.insert(args.end(), {"--set", "train.pipeline.micro_batches=2"});
    }
    const ProcessResult r = run_process(args, dir.path(), {"TMPDIR=" + dir.path()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return step_losses_in(read_file(dir.path() + "/" + name));
  };
  const std::vector<std::string> original = train(config, "original.jsonl", true);
  ASSERT_EQ(original.size(), 8u);
  EXPECT_EQ(train(map, "emitted.jsonl", false), original);  // the file as it is: its own settings
}

// A step a memory_limit splits into lock-step micro-batches is emitted as
// such (`schedule: none`), so the emitted file plans the same micro-batches.
TEST(PlanOutputs, AnEmittedMapKeepsLockStepMicroBatchesLockStep) {
  TempDir dir;
  const std::string config = kConfigs + "fashion_mnist_cnn_16mib.yaml", map = dir.path() + "/map.yaml";
  const ProcessResult p = run_process({DEVMAP_COORDINATOR_BIN, "plan", config, "--emit-map", map}, dir.path());
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const size_t at = p.out.find("memory plan of ");
  ASSERT_NE(at, std::string::npos) << p.out;
  const std::string first = p.out.substr(at, p.out.find('\n', at) - at);
  EXPECT_NE(first.find("run as 3 micro-batches: 1 of 22 and 2 of 21;"), std::string::npos) << first;
  const std::string text = read_file(map);
  EXPECT_NE(text.find("  pipeline:\n    micro_batches: 3\n    schedule: none\n"), std::string::npos) << text;
  const ProcessResult again = run_process({DEVMAP_COORDINATOR_BIN, "plan", map}, dir.path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("run as 3 micro-batches: 1 of 22 and 2 of 21;"), std::string::npos) << again.out;
}

TEST(PlanOutputs, DotDrawsEveryDeviceAndTheBytesThatCross) {
  TempDir dir;
  const std::string dot = dir.path() + "/placement.dot";
  const ProcessResult r = run_process(
      {DEVMAP_COORDINATOR_BIN, "plan", kConfigs + "fashion_mnist_cnn_split.yaml", "--dot", dot}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read_file(dot);
  EXPECT_EQ(text.rfind("digraph devmap {", 0), 0u) << text;
  EXPECT_NE(text.find("subgraph cluster_0 {\n    label=\"cpu:0 (1 thread)"), std::string::npos) << text;
  EXPECT_NE(text.find("subgraph cluster_1 {\n    label=\"cpu:1 (1 thread)"), std::string::npos) << text;
  // pool2 [64,64,7,7] floats cross to cpu:1 and its gradient comes back.
  EXPECT_NE(text.find("\"pool2\" -> \"flat\" [style=bold, color=firebrick, fontcolor=firebrick, "
                      "label=\"784.0 KiB\\n+ 784.0 KiB gradient back per step\"]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"conv1\" -> \"relu1\";"), std::string::npos) << text;
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz is absent: run scripts/setup.sh";
  const std::string svg = dir.path() + "/placement.svg";
  const ProcessResult s = run_process(
      {DEVMAP_COORDINATOR_BIN, "plan", kConfigs + "fashion_mnist_cnn_split.yaml", "--dot", svg}, dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(read_file(svg).find("<svg"), std::string::npos);
}

// Only gradients that exist come back: the loss on cpu:1 sends the logits'
// gradient to cpu:0; the accuracy beside it, a metric, has none.
TEST(PlanOutputs, DotLabelsOnlyTheGradientsThatComeBack) {
  TempDir dir;
  const std::string config = dir.path() + "/metrics_apart.yaml", dot = dir.path() + "/placement.dot";
  std::ofstream(config) << R"(model:
  ops:
    - {name: image, op: input, shape: [1, 28, 28]}
    - {name: label, op: labels, classes: 10}
    - {name: flat, op: flatten, inputs: [image]}
    - {name: logits, op: dense, inputs: [flat], units: 10}
    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label], device: cpu:1}
    - {name: acc, op: accuracy, inputs: [logits, label], device: cpu:1}
train: {epochs: 1, batch_size: 64}
devices: {cpu:0: {threads: 1}, cpu:1: {threads: 1}}
device_map: {default: cpu:0}
)";
  const ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "plan", config, "--dot", dot}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read_file(dot);
  // logits: [64,10] floats a step.
  EXPECT_NE(text.find("\"logits\" -> \"loss\" [style=bold, color=firebrick, fontcolor=firebrick, "
                      "label=\"2.5 KiB\\n+ 2.5 KiB gradient back per step\"]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"logits\" -> \"acc\" [style=bold, color=firebrick, fontcolor=firebrick, "
                      "label=\"2.5 KiB per step\"]"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace devmap::testing
