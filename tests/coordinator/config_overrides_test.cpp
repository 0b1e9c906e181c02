// --set KEY=VALUE overrides: applied before validation, reported as
// "--set KEY=VALUE: ..." when wrong.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;
using test::kMinimalModel;

const std::string kBase = kMinimalModel +
                          "train: {epochs: 2, optimizer: {type: momentum, learning_rate: 0.1}}\n"
                          "devices:\n"
                          "  cpu:0: {threads: 2}\n";

Config load(const std::vector<std::string>& overrides) {
  return load_config_text(kBase, "o.yaml", overrides);
}
std::string err(const std::vector<std::string>& overrides) {
  return error_of([&] { load(overrides); });
}

TEST(Overrides, SetValuesAtEveryLevel) {
  const Config c = load({"train.epochs=5", "data.train_limit=512", "devices.cpu:0.threads=3",
                         "train.optimizer.learning_rate=0.5", "model.ops.logits.bias=false", "job=predict"});
  EXPECT_EQ(c.train.epochs, 5);
  EXPECT_EQ(c.data.train_limit, 512);  // the data section did not exist: created
  EXPECT_EQ(c.devices[0].threads, 3);
  EXPECT_DOUBLE_EQ(c.train.optimizer.learning_rate, 0.5);
  EXPECT_FALSE(c.graph.node(c.graph.find("logits")).attrs.get_bool("bias"));
  EXPECT_EQ(c.job, Job::kPredict);
}

TEST(Overrides, LaterOverridesWin) {
  EXPECT_EQ(load({"train.epochs=5", "train.epochs=7"}).train.epochs, 7);
}

TEST(Overrides, ValuesAreYaml) {
  const Config c = load({"model.ops.image.shape=[1, 2, 8]"});
  EXPECT_EQ(c.graph.node(0).out_shape, (Shape{1, 2, 8}));
  EXPECT_EQ(c.graph.param_count(), 16 * 3 + 3);
}

TEST(Overrides, ChangeAnOpsAttributeAndDevice) {
  const Config c = load({"model.ops.logits.units=5", "model.ops.label.classes=5", "devices.gpu:1.memory_limit=1GiB",
                         "model.ops.flat.device=gpu:1"});
  EXPECT_EQ(c.graph.node(c.graph.find("logits")).out_shape, (Shape{5}));
  ASSERT_NE(c.find_device("gpu:1"), nullptr);
  EXPECT_EQ(c.find_device("gpu:1")->memory_limit, int64_t{1} << 30);
  EXPECT_EQ(c.graph.node(c.graph.find("flat")).device, "gpu:1");
  EXPECT_EQ(c.graph.node(c.graph.find("logits")).device, "cpu:0");
}

TEST(Overrides, OpNamesMayHoldDots) {
  const std::string text =
      "job: predict\n"
      "model:\n"
      "  ops:\n"
      "    - {name: image, op: input, shape: [4]}\n"
      "    - {name: block.fc, op: dense, inputs: [image], units: 2}\n";
  const Config c = load_config_text(text, "d.yaml", {"model.ops.block.fc.units=3"});
  EXPECT_EQ(c.graph.node(1).out_shape, (Shape{3}));
}

TEST(Overrides, ResolvedYamlHoldsTheOverrides) {
  const Config c = load({"train.epochs=9"});
  EXPECT_NE(c.resolved_yaml.find("epochs: 9"), std::string::npos) << c.resolved_yaml;
  EXPECT_EQ(load_config_text(c.resolved_yaml, "r.yaml").train.epochs, 9);
}

TEST(Overrides, UnknownPathsNameTheValidKeys) {
  EXPECT_EQ(err({"train.epoch=1"}), "--set train.epoch=1: unknown key 'epoch' in train (did you mean 'epochs'?)");
  EXPECT_EQ(err({"trian.epochs=1"}),
            "--set trian.epochs=1: unknown key 'trian' at the top level (did you mean 'train'?)");
  EXPECT_EQ(err({"train.optimizer.lr=1"}),
            "--set train.optimizer.lr=1: unknown key 'lr' in train.optimizer (type momentum) (valid: type, "
            "learning_rate, weight_decay, momentum, schedule)");
  EXPECT_EQ(err({"devices.cpu:0.thread=1"}),
            "--set devices.cpu:0.thread=1: unknown key 'thread' in devices.cpu:0 (did you mean 'threads'?)");
  EXPECT_EQ(err({"devices.cpu0.threads=1"}),
            "--set devices.cpu0.threads=1: bad device name 'cpu0' (expected cpu:N or gpu:N, e.g. cpu:0)");
  EXPECT_EQ(err({"model.ops.conv9.filters=16"}),
            "--set model.ops.conv9.filters=16: model.ops has no op named 'conv9' (ops: image, label, flat, logits, "
            "loss)");
  EXPECT_EQ(err({"model.ops.logits.unit=16"}),
            "--set model.ops.logits.unit=16: unknown key 'unit' in op 'logits' (dense) (did you mean 'units'?)");
  EXPECT_EQ(err({"model.ops.logits=16"}),
            "--set model.ops.logits=16: name one of the op's keys: model.ops.logits.KEY=VALUE");
  EXPECT_EQ(err({"train.epochs.x=1"}),
            "--set train.epochs.x=1: train.epochs is a single value, not a mapping with keys");
  EXPECT_EQ(err({"train.epochs"}), "--set train.epochs: expected KEY=VALUE, e.g. train.epochs=1");
  EXPECT_EQ(err({"train..epochs=1"}),
            "--set train..epochs=1: the key 'train..epochs' has an empty part (keys are joined by single dots)");
  EXPECT_EQ(err({"train.epochs=[1"}),
            "--set train.epochs=[1: cannot read the value as YAML: end of sequence flow not found");
}

TEST(Overrides, BadValuesAreReportedAgainstTheOverride) {
  EXPECT_EQ(err({"train.epochs=x"}), "--set train.epochs=x: train.epochs must be an integer, got 'x'");
  EXPECT_EQ(err({"train.epochs=0"}), "--set train.epochs=0: train.epochs must be >= 1, got 0");
  EXPECT_EQ(err({"train.epochs="}), "--set train.epochs=: train.epochs must be an integer, got an empty value");
  EXPECT_EQ(err({"train.batch_size=[1, 2]"}),
            "--set train.batch_size=[1, 2]: train.batch_size must be an integer, got a list");
  EXPECT_EQ(err({"model.ops.logits.units=0"}),
            "--set model.ops.logits.units=0: op 'logits' (dense) attribute 'units' must be >= 1, got 0");
  EXPECT_EQ(err({"model.ops.image.shape=[1, x]"}),
            "--set model.ops.image.shape=[1, x]: op 'image' (input) attribute 'shape' must be a list of integers, got "
            "'x'");
  EXPECT_EQ(err({"model.ops.flat.device=cpu:3"}),
            "--set model.ops.flat.device=cpu:3: op 'flat' is placed on 'cpu:3', which is not declared in devices "
            "(declared: cpu:0)");
  EXPECT_EQ(err({"devices.cpu:0.memory_limit=12 MB"}),
            "--set devices.cpu:0.memory_limit=12 MB: devices.cpu:0.memory_limit must be a number of bytes or a size "
            "such as 64MiB or 1.5GiB, got '12 MB' (units: B, KiB, MiB, GiB, TiB)");
  EXPECT_EQ(err({"job=fit"}), "--set job=fit: job must be one of train, predict, got 'fit'");
}

TEST(Overrides, MistakesLeftInTheFileStillPointAtTheFile) {
  // The override is fine; the file's own momentum key does not suit adam.
  EXPECT_EQ(err({"train.optimizer.type=adam", "train.optimizer.momentum=0.5"}),
            "--set train.optimizer.momentum=0.5: train.optimizer.momentum does not apply to optimizer type 'adam' (its "
            "keys: type, learning_rate, weight_decay, beta1, beta2, epsilon, schedule)");
  EXPECT_EQ(error_of([&] { load_config_text(kBase + "data: {test_limit: -2}\n", "o.yaml", {"train.epochs=1"}); }),
            "o.yaml:11:20: data.test_limit must be >= 0, got -2");
}

}  // namespace
}  // namespace devmap
