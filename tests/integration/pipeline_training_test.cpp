// Pipelined training computes the same bits as lock-step: the reference
// model over two workers (fashion_mnist_cnn_split.yaml) and over three with
// a round trip (fashion_mnist_cnn_3way.yaml), 4 micro-batches a step,
// schedules 1f1b and gpipe against none, equal losses at every one of 100
// steps, at 1 and at 2 threads per device. And a pipelined prediction writes
// the same rows as a lock-step one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
constexpr int kSteps = 100;

struct Case {
  std::string config;
  int devices;
  int threads;
};

class PipelineTraining : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  }

  std::vector<std::string> train(const std::string& schedule) {
    const Case& c = GetParam();
    const std::string sub = dir_.path() + "/" + schedule;
    std::filesystem::create_directories(sub);
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                     "train",
                                     kConfigs + c.config,
                                     "--metrics",
                                     sub + "/m.jsonl",
                                     "--log-every",
                                     "1",
                                     "--checkpoint",
                                     sub + "/w.safetensors",
                                     "--set",
                                     "data.train_limit=3200",
                                     "--set",
                                     "data.test_limit=64",
                                     "--set",
                                     "train.batch_size=32",
                                     "--set",
                                     "train.max_steps=" + std::to_string(kSteps),
                                     "--set",
                                     "train.pipeline.micro_batches=4",
                                     "--set",
                                     "train.pipeline.schedule=" + schedule};
    for (int d = 0; d < c.devices; ++d)
      args.insert(args.end(), {"--set", "devices.cpu:" + std::to_string(d) + ".threads=" + std::to_string(c.threads)});
    ProcessResult r = run_process(args, sub, {"TMPDIR=" + sub});
    EXPECT_EQ(r.exit_code, 0) << schedule << ": " << r.err;
    return step_losses_in(read_file(sub + "/m.jsonl"));
  }
  TempDir dir_;
};

TEST_P(PipelineTraining, PipelinedStepsGiveTheLockStepLossesToTheBit) {
  const std::vector<std::string> none = train("none");
  ASSERT_EQ(none.size(), static_cast<size_t>(kSteps));
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const std::vector<std::string> piped = train(schedule);
    ASSERT_EQ(piped.size(), none.size()) << schedule;
    for (size_t i = 0; i < none.size(); ++i) ASSERT_EQ(piped[i], none[i]) << schedule << " at step " << i + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, PipelineTraining,
                         ::testing::Values(Case{"fashion_mnist_cnn_split.yaml", 2, 1},
                                           Case{"fashion_mnist_cnn_split.yaml", 2, 2},
                                           Case{"fashion_mnist_cnn_3way.yaml", 3, 1},
                                           Case{"fashion_mnist_cnn_3way.yaml", 3, 2}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.devices == 2 ? "Split" : "ThreeWay") + "_" +
                                  std::to_string(param_info.param.threads) + "Threads";
                         });

TEST(PipelinePredict, RoundsOfBatchesWriteTheLockStepRows) {
  const std::string test = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(test)) GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  const std::string weights = dir.path() + "/w.safetensors";
  ProcessResult t =
      run_process({DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn_split.yaml", "--checkpoint", weights,
                   "--out-dir", dir.path(), "--set", "train.max_steps=5", "--set", "data.test_limit=64"},
                  dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  auto predict = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                     "predict",
                                     kConfigs + "fashion_mnist_cnn_split.yaml",
                                     "--weights",
                                     weights,
                                     "--input",
                                     test,
                                     "--output",
                                     dir.path() + "/" + name,
                                     "--batch",
                                     "500",
                                     "--metrics",
                                     dir.path() + "/" + name + ".jsonl"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = run_process(args, dir.path(), {"TMPDIR=" + dir.path()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_file(dir.path() + "/" + name);
  };
  const std::string lockstep = predict("lockstep.csv", {});
  const std::string piped = predict("piped.csv", {"--set", "train.pipeline.micro_batches=4"});
  EXPECT_EQ(std::count(lockstep.begin(), lockstep.end(), '\n'), 10001);
  EXPECT_EQ(piped, lockstep);
}

}  // namespace
}  // namespace devmap::testing
