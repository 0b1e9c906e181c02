// What each section of a config turns into, including the defaults.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;
using test::kMinimalModel;

TEST(ConfigFields, DefaultsWhenOnlyAModelIsGiven) {
  const Config c = load_config_text(kMinimalModel, "min.yaml");
  EXPECT_EQ(c.path, "min.yaml");
  EXPECT_EQ(c.job, Job::kTrain);
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].name, "cpu:0");
  EXPECT_EQ(c.devices[0].kind, DeviceKind::kCpu);
  EXPECT_EQ(c.devices[0].threads, 1);
  EXPECT_EQ(c.devices[0].memory_limit, 0);
  EXPECT_EQ(c.default_device, "cpu:0");
  EXPECT_EQ(c.data.train_images, "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
  EXPECT_EQ(c.data.train_labels, "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz");
  EXPECT_EQ(c.data.test_images, "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(c.data.test_labels, "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(c.data.train_limit, 0);
  EXPECT_EQ(c.train.epochs, 1);
  EXPECT_EQ(c.train.batch_size, 64);
  EXPECT_EQ(c.train.eval_batch_size, 256);
  EXPECT_EQ(c.train.max_steps, 0);
  EXPECT_EQ(c.train.seed, 0u);
  EXPECT_TRUE(c.train.shuffle);
  EXPECT_EQ(c.train.optimizer.kind, OptimizerConfig::Kind::kSgd);
  EXPECT_DOUBLE_EQ(c.train.optimizer.learning_rate, 0.01);
  EXPECT_EQ(c.find_device("cpu:0"), &c.devices[0]);
  EXPECT_EQ(c.find_device("cpu:1"), nullptr);
}

TEST(ConfigFields, ReadsEverySection) {
  const std::string text = kMinimalModel +
                           "job: predict\n"
                           "data: {train_images: a.gz, train_labels: b, test_images: c, test_labels: d,"
                           " train_limit: 100, test_limit: 50}\n"
                           "train:\n"
                           "  epochs: 3\n"
                           "  batch_size: 32\n"
                           "  eval_batch_size: 128\n"
                           "  max_steps: 10\n"
                           "  seed: 18446744073709551615\n"
                           "  shuffle: false\n"
                           "  optimizer: {type: adam, learning_rate: 0.001, beta1: 0.8, beta2: 0.99, epsilon: 1e-6,"
                           " weight_decay: 0.0005}\n"
                           "devices:\n"
                           "  gpu:0: {memory_limit: 2GiB}\n"
                           "  cpu:0: {threads: 4, memory_limit: 1048576}\n"
                           "  cpu:1:\n";
  const Config c = load_config_text(text, "all.yaml");
  EXPECT_EQ(c.job, Job::kPredict);
  EXPECT_EQ(c.data.train_images, "a.gz");
  EXPECT_EQ(c.data.test_labels, "d");
  EXPECT_EQ(c.data.train_limit, 100);
  EXPECT_EQ(c.data.test_limit, 50);
  EXPECT_EQ(c.train.epochs, 3);
  EXPECT_EQ(c.train.batch_size, 32);
  EXPECT_EQ(c.train.eval_batch_size, 128);
  EXPECT_EQ(c.train.max_steps, 10);
  EXPECT_EQ(c.train.seed, 18446744073709551615u);
  EXPECT_FALSE(c.train.shuffle);
  const OptimizerConfig& o = c.train.optimizer;
  EXPECT_EQ(o.kind, OptimizerConfig::Kind::kAdam);
  EXPECT_DOUBLE_EQ(o.learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(o.beta1, 0.8);
  EXPECT_DOUBLE_EQ(o.beta2, 0.99);
  EXPECT_DOUBLE_EQ(o.epsilon, 1e-6);
  EXPECT_DOUBLE_EQ(o.weight_decay, 0.0005);
  ASSERT_EQ(c.devices.size(), 3u);  // in file order
  EXPECT_EQ(c.devices[0].name, "gpu:0");
  EXPECT_EQ(c.devices[0].kind, DeviceKind::kGpu);
  EXPECT_EQ(c.devices[0].memory_limit, int64_t{2} << 30);
  EXPECT_EQ(c.devices[0].loc.line, 19);
  EXPECT_EQ(c.devices[1].threads, 4);
  EXPECT_EQ(c.devices[1].memory_limit, 1048576);
  EXPECT_EQ(c.devices[2].name, "cpu:1");
  EXPECT_EQ(c.devices[2].index, 1);
  EXPECT_EQ(c.devices[2].threads, 1);
  EXPECT_EQ(c.default_device, "gpu:0");  // the first declared
}

TEST(ConfigFields, FaultsAndRestarts) {
  const Config d = load_config_text(kMinimalModel, "min.yaml");
  EXPECT_DOUBLE_EQ(d.faults.step_timeout, 30);
  EXPECT_DOUBLE_EQ(d.faults.heartbeat_timeout, 10);
  EXPECT_DOUBLE_EQ(d.faults.grace_period, 30);
  EXPECT_EQ(d.train.max_restarts, 0);
  EXPECT_EQ(d.train.keep_checkpoints, 3);
  const Config c = load_config_text(kMinimalModel +
                                        "faults: {step_timeout: 2.5, heartbeat_timeout: 4, grace_period: 60}\n"
                                        "train: {max_restarts: 2, keep_checkpoints: 5}\n",
                                    "f.yaml", {"faults.grace_period=9"});
  EXPECT_DOUBLE_EQ(c.faults.step_timeout, 2.5);
  EXPECT_DOUBLE_EQ(c.faults.heartbeat_timeout, 4);
  EXPECT_DOUBLE_EQ(c.faults.grace_period, 9);
  EXPECT_EQ(c.train.max_restarts, 2);
  EXPECT_EQ(c.train.keep_checkpoints, 5);
  EXPECT_EQ(error_of([] { load_config_text(kMinimalModel + "faults: {step_timeout: 0}\n", "f.yaml"); }),
            "f.yaml:8:24: faults.step_timeout must be in (0, 604800], got 0");
  EXPECT_NE(error_of([] { load_config_text(kMinimalModel + "faults: {timeout: 3}\n", "f.yaml"); }).find("timeout"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              load_config_text(kMinimalModel + "train: {keep_checkpoints: 0}\n", "f.yaml");
            }).find("keep_checkpoints"),
            std::string::npos);
}

TEST(ConfigFields, OpsGetTheirDeviceOrTheDefault) {
  const std::string text =
      "devices: {cpu:0: {threads: 1}, cpu:1: {threads: 1}}\n"
      "device_map: {default: cpu:1}\n"
      "model:\n"
      "  ops:\n"
      "    - {name: image, op: input, shape: [1, 4, 4], device: cpu:0}\n"
      "    - {name: flat, op: flatten, inputs: [image]}\n";
  const Config c = load_config_text(text + "job: predict\n", "dev.yaml");
  EXPECT_EQ(c.graph.node(0).device, "cpu:0");
  EXPECT_EQ(c.graph.node(1).device, "cpu:1");
}

TEST(ConfigFields, AbsentAttributesGetTheSchemaDefault) {
  const std::string text =
      "job: predict\n"
      "model:\n"
      "  ops:\n"
      "    - {name: image, op: input, shape: [1, 8, 8]}\n"
      "    - {name: conv, op: conv2d, inputs: [image], filters: 2, kernel: 3}\n"
      "    - {name: pool, op: max_pool2d, inputs: [conv]}\n"
      "    - {name: drop, op: dropout, inputs: [pool], rate: 0.25}\n"
      "    - {name: fc, op: dense, inputs: [drop], units: 4, bias: false}\n";
  EXPECT_EQ(error_of([&] { load_config_text(text, "x.yaml"); }),
            "x.yaml:8:7: dense 'fc': input must be a vector per sample, got [2,3,3] (put a flatten op in front)");
  const std::string fixed = text.substr(0, text.rfind("    - {name: fc")) +
                            "    - {name: flat, op: flatten, inputs: [drop]}\n"
                            "    - {name: fc, op: dense, inputs: [flat], units: 4, bias: false}\n";
  const Config c = load_config_text(fixed, "x.yaml");
  const Node& conv = c.graph.node(c.graph.find("conv"));
  EXPECT_EQ(conv.attrs.get_int("stride"), 1);
  EXPECT_EQ(conv.attrs.get_int("padding"), 0);
  EXPECT_TRUE(conv.attrs.get_bool("bias"));
  const Node& pool = c.graph.node(c.graph.find("pool"));
  EXPECT_EQ(pool.attrs.get_int("kernel"), 2);
  EXPECT_EQ(pool.attrs.get_int("stride"), 0);
  EXPECT_DOUBLE_EQ(c.graph.node(c.graph.find("drop")).attrs.get_float("rate"), 0.25);
  EXPECT_FALSE(c.graph.node(c.graph.find("fc")).attrs.get_bool("bias"));
  EXPECT_EQ(c.graph.param_count(), 2 * 9 + 2 + 4 * 18);  // conv weight+bias, dense weight only
}

TEST(ConfigFields, PredictNeedsNoLossButTrainDoes) {
  const std::string ops =
      "model:\n"
      "  ops:\n"
      "    - {name: image, op: input, shape: [4]}\n"
      "    - {name: fc, op: dense, inputs: [image], units: 2}\n"
      "    - {name: pred, op: argmax, inputs: [fc]}\n";
  EXPECT_NO_THROW(load_config_text("job: predict\n" + ops, "p.yaml"));
  EXPECT_EQ(
      error_of([&] { load_config_text("job: train\n" + ops, "p.yaml"); }),
      "p.yaml:4:5: job is train, but the model has no labels op: add e.g. {name: label, op: labels, classes: 10}");
}

TEST(ConfigFields, LossAndMetricNeedAsManyClassesAsLogits) {
  auto err = [](const std::string& extra) {
    return error_of([&] { load_config_text(kMinimalModel + extra, "k.yaml"); });
  };
  EXPECT_NO_THROW(load_config_text(kMinimalModel, "k.yaml"));  // 3 logits, 3 classes
  EXPECT_EQ(err("    - {name: acc, op: accuracy, inputs: [flat, label]}\n"),
            "k.yaml:8:7: op 'acc': logits have 16 classes but labels 'label' has 3");
  EXPECT_EQ(error_of([&] { load_config_text(kMinimalModel, "k.yaml", {"model.ops.label.classes=4"}); }),
            "k.yaml:7:7: op 'loss': logits have 3 classes but labels 'label' has 4");
  EXPECT_EQ(err("    - {name: pred, op: argmax, inputs: [logits]}\n"
                "    - {name: acc, op: accuracy, inputs: [logits, pred]}\n"),
            "k.yaml:9:7: op 'acc': its second input must be the labels op, got 'pred' (argmax)");
}

TEST(ConfigFields, ReportsOneMessagePerMistake) {
  auto err = [](const std::string& text) { return error_of([&] { load_config_text(text, "c.yaml"); }); };
  EXPECT_EQ(err(kMinimalModel + "train: {shuffle: maybe}\n"),
            "c.yaml:8:18: train.shuffle must be true or false, got 'maybe'");
  EXPECT_EQ(err(kMinimalModel + "train: {seed: -1}\n"), "c.yaml:8:15: train.seed must be >= 0, got -1");
  EXPECT_EQ(err(kMinimalModel + "train: {epochs: 1.5}\n"), "c.yaml:8:17: train.epochs must be an integer, got '1.5'");
  EXPECT_EQ(err(kMinimalModel + "train:\n  epochs:\n"),
            "c.yaml:9:3: train.epochs must be an integer, got an empty value");
  EXPECT_EQ(err(kMinimalModel + "train: 5\n"), "c.yaml:8:8: train must be a mapping, got '5'");
  EXPECT_EQ(err(kMinimalModel + "data: {train_limit: -1}\n"), "c.yaml:8:21: data.train_limit must be >= 0, got -1");
  EXPECT_EQ(err(kMinimalModel + "data: {train_images: ''}\n"),
            "c.yaml:8:22: data.train_images must not be empty (omit it for "
            "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz)");
  EXPECT_EQ(err(kMinimalModel + "train: {optimizer: {type: momentum, momentum: 1}}\n"),
            "c.yaml:8:47: train.optimizer.momentum must be in [0, 1), got 1");
  EXPECT_EQ(err(kMinimalModel + "devices: {}\n"),
            "c.yaml:8:10: devices must declare at least one device, e.g. devices: {cpu:0: {threads: 2}}");
  EXPECT_EQ(err(kMinimalModel + "devices: {cpu:0: {threads: 1, memory_limit: -1}}\n"),
            "c.yaml:8:45: devices.cpu:0.memory_limit must be >= 0, got -1");
  EXPECT_EQ(err(kMinimalModel + "device_map: {default: gpu}\n"),
            "c.yaml:8:23: device_map.default: bad device name 'gpu' (expected cpu:N or gpu:N, e.g. cpu:0)");
  EXPECT_EQ(err("model: {ops: []}\n"),
            "c.yaml:1:14: model.ops must not be empty: list the model's ops, starting with an input op");
  EXPECT_EQ(err("model: {layers: []}\n"), "c.yaml:1:9: unknown key 'layers' in model (valid: ops)");
  EXPECT_EQ(err("model: {}\n"), "c.yaml:1:8: missing required key 'ops' in model");
  EXPECT_EQ(err("model: {ops: [{name: image, op: input}]}\n"),
            "c.yaml:1:15: op 'image' (input) is missing required attribute 'shape'");
  EXPECT_EQ(err("model: {ops: [{op: input, shape: [1]}]}\n"),
            "c.yaml:1:15: model.ops entry 1 is missing required key 'name'");
  EXPECT_EQ(err("model: {ops: [image]}\n"),
            "c.yaml:1:15: model.ops entry 1 must be a mapping such as {name: relu1, op: relu, inputs: [conv1]}, got "
            "'image'");
  EXPECT_EQ(err("model: {ops: [{name: image, op: input, shape: []}]}\n"),
            "c.yaml:1:47: op 'image' (input) attribute 'shape' must not be empty");
  EXPECT_EQ(err("model: {ops: [{name: image, op: input, shape: [1, 0]}]}\n"),
            "c.yaml:1:51: op 'image' (input) attribute 'shape' must hold integers >= 1, got 0");
  EXPECT_EQ(err("model: {ops: [{name: image, op: input, shape: [1], inputs: [image]}]}\n"),
            "c.yaml:1:61: op 'image' input 'image' names the op itself");
  EXPECT_EQ(err("model: {ops: [{name: x, op: flatten}]}\n"), "c.yaml:1:15: op 'x' (flatten) takes 1 input, got 0");
  EXPECT_EQ(err("model: {ops: [{name: image, op: input, shape: [1]}, {name: x, op: concat, inputs: [image]}]}\n"),
            "c.yaml:1:83: op 'x' (concat) takes 2 or more inputs, got 1");
  EXPECT_EQ(err("model: {ops: [{name: x, op: relu, inputs: x}]}\n"),
            "c.yaml:1:43: op 'x' (relu) inputs must be a list of op names such as [conv1], got 'x'");
  EXPECT_EQ(
      err("model: {ops: [{name: x, op: input, shape: [1]}, {name: y, op: relu, inputs: [x]}]}\n"),
      "c.yaml:1:14: job is train, but the model has no labels op: add e.g. {name: label, op: labels, classes: 10}");
}

}  // namespace
}  // namespace devmap
