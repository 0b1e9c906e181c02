// configs/fashion_mnist_resnet.yaml under a memory_limit (22 MiB at a
// batch of 16, where the whole plan is 26.72 MiB): the plan recomputes
// activations instead of splitting the step, the run stays inside the
// limit and trains to the unconstrained run's losses and weights file (the
// running statistics included), to the bit. Pinned `recompute: never`, the
// same limit needs micro-batches instead.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"
#include "tests/support/train_run.h"

namespace devmap::testing {
namespace {

const std::string kConfig = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_resnet.yaml";
const std::vector<std::string> kShort = {
    "--set", "train.batch_size=16",      "--set", "data.train_limit=160",
    "--set", "data.test_limit=32",       "--set", "train.epochs=1",
    "--set", "train.eval_batch_size=32", "--set", "train.optimizer.schedule.warmup_steps=2"};

bool have_data() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

TrainRun train(const std::string& dir, const std::string& tag, std::vector<std::string> extra) {
  extra.insert(extra.begin(), kShort.begin(), kShort.end());
  return train_run(dir, tag, kConfig, extra);
}

TEST(ResnetRecompute, UnderALimitTheStepRecomputesWithTheUnconstrainedBits) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  const TrainRun unlimited = train(dir.path(), "free", {});
  const TrainRun limited = train(dir.path(), "limited", {"--set", "devices.cpu:0.memory_limit=22MiB"});
  ASSERT_EQ(unlimited.process.exit_code, 0) << unlimited.process.err;
  ASSERT_EQ(limited.process.exit_code, 0) << limited.process.err;
  EXPECT_NE(limited.process.err.find("devmap: memory: cpu:0: recomputes relu1 (with bn1): saves"), std::string::npos)
      << limited.process.err;
  EXPECT_EQ(limited.process.err.find("limit; running"), std::string::npos) << limited.process.err;
  ASSERT_EQ(unlimited.losses.size(), 10u) << unlimited.process.err;
  EXPECT_EQ(limited.losses, unlimited.losses);
  ASSERT_FALSE(unlimited.weights.empty());
  EXPECT_TRUE(limited.weights == unlimited.weights) << "the weights files differ";
  // Inside the limit, as planned.
  const std::vector<std::string> device = lines_with(limited.metrics, "device");
  ASSERT_FALSE(device.empty()) << limited.metrics;
  EXPECT_EQ(json_field(device.back(), "peak_bytes"), json_field(device.back(), "planned_bytes"));
  EXPECT_LE(std::stoll(json_field(device.back(), "peak_bytes")), int64_t{22} << 20);
}

// recompute: always is printed as a pin; on a loss it is an error at the
// op (exit 2), as an unknown value is; a limit recomputation cannot meet
// still runs as micro-batches.
TEST(ResnetRecompute, PinsErrorsAndMicroBatchesBeyondWhatRecomputationSaves) {
  TempDir dir;
  ProcessResult plan = run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfig, "--set", "train.batch_size=16", "--set",
                                    "devices.cpu:0.memory_limit=22MiB", "--set", "model.ops.relu1.recompute=always"},
                                   dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("cpu:0: recomputes relu1 (with bn1) (recompute: always): saves"), std::string::npos)
      << plan.out;
  ProcessResult bad = run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfig, "--set", "model.ops.loss.recompute=always"},
                                  dir.path(), {"TMPDIR=" + dir.path()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("op 'loss' (softmax_cross_entropy) has recompute: always, but it cannot be recomputed"),
            std::string::npos)
      << bad.err;
  ProcessResult typo = run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfig, "--set", "model.ops.relu1.recompute=yes"},
                                   dir.path(), {"TMPDIR=" + dir.path()});
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("must be one of"), std::string::npos) << typo.err;
  ProcessResult tight = run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfig, "--set", "train.batch_size=16", "--set",
                                     "devices.cpu:0.memory_limit=20MiB"},
                                    dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(tight.exit_code, 0) << tight.err;
  EXPECT_NE(tight.out.find("cpu:0: recomputes relu1 (with bn1): saves"), std::string::npos) << tight.out;
  EXPECT_NE(tight.out.find("> 20.00 MiB limit; running 2 micro-batches of 8"), std::string::npos) << tight.out;
}

}  // namespace
}  // namespace devmap::testing
