// The example configs in configs/ load as they are and describe the models
// their comments promise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "coordinator/config/loader.h"

namespace devmap {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";

TEST(ExampleConfigs, CnnHasTheReferenceShapeAndSettings) {
  const Config c = load_config(kConfigs + "fashion_mnist_cnn.yaml");
  EXPECT_EQ(c.graph.param_count(), 3274634);
  EXPECT_EQ(c.job, Job::kTrain);
  EXPECT_EQ(c.graph.node(c.graph.find("pool2")).out_shape, (Shape{64, 7, 7}));
  EXPECT_EQ(c.graph.node(c.graph.find("flat")).out_shape, (Shape{3136}));
  EXPECT_EQ(c.graph.node(c.graph.find("logits")).out_shape, (Shape{10}));
  EXPECT_GE(c.graph.find_role(OpRole::kLoss), 0);
  EXPECT_EQ(c.train.epochs, 2);
  EXPECT_EQ(c.train.batch_size, 64);
  EXPECT_EQ(c.train.seed, 1u);
  EXPECT_EQ(c.train.optimizer.kind, OptimizerConfig::Kind::kMomentum);
  EXPECT_DOUBLE_EQ(c.train.optimizer.learning_rate, 0.01);
  EXPECT_DOUBLE_EQ(c.train.optimizer.momentum, 0.9);
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].name, "cpu:0");
  EXPECT_EQ(c.devices[0].threads, 2);
  EXPECT_EQ(c.default_device, "cpu:0");
  for (const Node& n : c.graph.nodes()) EXPECT_EQ(n.device, "cpu:0") << n.name;
}

TEST(ExampleConfigs, SplitPutsTheDenseLayersOnTheSecondDevice) {
  // tests/integration/split_training_test.cpp relies on this split.
  const Config c = load_config(kConfigs + "fashion_mnist_cnn_split.yaml");
  const Config one = load_config(kConfigs + "fashion_mnist_cnn.yaml");
  ASSERT_EQ(c.graph.size(), one.graph.size());
  const std::set<std::string> on_cpu1 = {"flat", "fc1", "relu3", "logits", "loss", "acc"};
  for (int i = 0; i < c.graph.size(); ++i) {
    const Node& n = c.graph.node(i);
    EXPECT_EQ(n.name, one.graph.node(i).name);  // the same ops in the same order
    EXPECT_EQ(n.device, on_cpu1.count(n.name) ? "cpu:1" : "cpu:0") << n.name;
  }
  EXPECT_EQ(c.placement_reason[static_cast<size_t>(c.graph.find("conv1"))], "group 'features'");
  EXPECT_EQ(c.placement_reason[static_cast<size_t>(c.graph.find("fc1"))].rfind("device_map.place 'fc*' (", 0), 0u);
  EXPECT_EQ(c.graph.param_count(), one.graph.param_count());
  ASSERT_EQ(c.devices.size(), 2u);
  for (const DeviceSpec& d : c.devices) EXPECT_EQ(d.threads, 1) << d.name;
}

TEST(ExampleConfigs, ThreeWaySplitLoads) {
  const Config c = load_config(kConfigs + "fashion_mnist_cnn_3way.yaml");
  EXPECT_EQ(c.devices.size(), 3u);
}

TEST(ExampleConfigs, MlpHasTheExpectedParameters) {
  const Config c = load_config(kConfigs + "fashion_mnist_mlp.yaml");
  EXPECT_EQ(c.graph.param_count(), 203530);
  EXPECT_EQ(c.train.epochs, 2);
  EXPECT_EQ(c.train.optimizer.kind, OptimizerConfig::Kind::kMomentum);
  EXPECT_EQ(c.data.train_images, "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

TEST(ExampleConfigs, OpsRecordWhereTheConfigDefinesThem) {
  const std::string path = kConfigs + "fashion_mnist_cnn.yaml";
  const Config c = load_config(path);
  const Node& image = c.graph.node(0);
  EXPECT_EQ(image.loc.file, path);
  EXPECT_GT(image.loc.line, 1);
  EXPECT_EQ(image.loc.col, 7);  // the '{' of "    - {name: image, ..."
  EXPECT_LT(image.loc.line, c.graph.node(1).loc.line);
}

TEST(ExampleConfigs, ResolvedYamlLoadsToTheSameConfig) {
  const Config c = load_config(kConfigs + "fashion_mnist_cnn.yaml", {"train.epochs=1"});
  const Config again = load_config_text(c.resolved_yaml, "resolved.yaml");
  EXPECT_EQ(again.graph.param_count(), c.graph.param_count());
  EXPECT_EQ(again.train.epochs, 1);
  EXPECT_EQ(again.devices[0].threads, 2);
}

// A command in a config's comments (`scripts/launch.sh ... configs/X.yaml`)
// runs that config, not another one.
TEST(ExampleConfigs, CommentedCommandsRunTheirOwnConfig) {
  int commands = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs)) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string own = "configs/" + entry.path().filename().string();
    std::ifstream in(entry.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      const size_t launch = line.find("scripts/launch.sh");
      if (line.rfind('#', 0) != 0 || launch == std::string::npos) continue;
      const size_t at = line.find("configs/", launch);
      if (at == std::string::npos) continue;
      const size_t end = line.find(".yaml", at);
      ASSERT_NE(end, std::string::npos) << own << ":" << line_no;
      EXPECT_EQ(line.substr(at, end + 5 - at), own) << own << ":" << line_no << ": " << line;
      ++commands;
    }
  }
  EXPECT_GE(commands, 10);
}

}  // namespace
}  // namespace devmap
