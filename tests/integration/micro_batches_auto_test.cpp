// train.pipeline.micro_batches auto: the first run measures what the
// calibration cache lacks and picks a count by predicted step time; a
// second run reuses the cache (nothing measured, the same count); and the
// chosen count trains with the bits of that count given by hand.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kSplit = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml";

class AutoMicroBatches : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  }

  // Trains 10 steps of 32; returns the process result, metrics in NAME.jsonl.
  ProcessResult train(const std::string& name, const std::string& micro_batches) {
    return run_process({DEVMAP_COORDINATOR_BIN,
                        "train",
                        kSplit,
                        "--metrics",
                        dir_.path() + "/" + name + ".jsonl",
                        "--log-every",
                        "1",
                        "--checkpoint",
                        dir_.path() + "/" + name + ".safetensors",
                        "--calibration",
                        cache(),
                        "--set",
                        "data.train_limit=640",
                        "--set",
                        "data.test_limit=64",
                        "--set",
                        "train.batch_size=32",
                        "--set",
                        "train.max_steps=10",
                        "--set",
                        "train.pipeline.micro_batches=" + micro_batches},
                       dir_.path(), {"TMPDIR=" + dir_.path()});
  }
  std::string cache() const { return dir_.path() + "/calibration.tsv"; }
  std::string event(const std::string& name, const std::string& kind) const {
    std::istringstream in(read_file(dir_.path() + "/" + name + ".jsonl"));
    for (std::string line; std::getline(in, line);)
      if (json_field(line, "event") == kind) return line;
    return "";
  }
  std::vector<std::string> losses(const std::string& name) const {
    return step_losses_in(read_file(dir_.path() + "/" + name + ".jsonl"));
  }
  TempDir dir_;
};

TEST_F(AutoMicroBatches, CalibratesOnceAndTrainsWithTheBitsOfTheChosenCount) {
  const ProcessResult first = train("first", "auto");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("calibrate: cpu:0 (1 thread), batch 32"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("devmap: micro_batches auto: "), std::string::npos) << first.err;
  const std::string plan = event("first", "memory_plan");
  // Everything it predicted from was measured: the cache was written and read.
  EXPECT_NE(plan.find("\"estimated\":[]"), std::string::npos) << plan;
  const std::string count = json_field(plan, "micro_batches");
  ASSERT_FALSE(count.empty()) << plan;

  const ProcessResult second = train("second", "auto");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.err.find("calibrate:"), std::string::npos) << "measured again:\n" << second.err;
  EXPECT_EQ(json_field(event("second", "memory_plan"), "micro_batches"), count);

  const ProcessResult by_hand = train("by_hand", count);
  ASSERT_EQ(by_hand.exit_code, 0) << by_hand.err;
  const std::vector<std::string> a = losses("first"), b = losses("by_hand");
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a, b) << "auto chose " << count;
}

TEST_F(AutoMicroBatches, APlanWithoutCalibrationSaysWhatItEstimated) {
  const ProcessResult r = run_process(
      {DEVMAP_COORDINATOR_BIN, "plan", kSplit, "--calibration", cache(), "--set", "train.pipeline.micro_batches=auto"},
      dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("micro_batches auto: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted from estimates, not measurements, for "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run `coordinator calibrate " + kSplit + "`"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(cache())) << "plan wrote the cache";
}

TEST_F(AutoMicroBatches, ABadCountNamesAuto) {
  const ProcessResult r =
      run_process({DEVMAP_COORDINATOR_BIN, "plan", kSplit, "--set", "train.pipeline.micro_batches=many"}, dir_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("train.pipeline.micro_batches must be a count from 1 to 256 or auto, got 'many'"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace devmap::testing
