// Ops placed on a GPU that is not usable here: a clear error, or with
// allow_soft_placement a CPU run with every move logged. On a machine with
// a usable GPU there is nothing to move, and these tests skip.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";

class NoUsableGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto probe = std::filesystem::path(DEVMAP_COORDINATOR_BIN).parent_path() / "worker_gpu";
    if (std::filesystem::exists(probe) && run_process({probe.string(), "--probe"}, dir_.path(), {}).exit_code == 0)
      GTEST_SKIP() << "this machine has a usable GPU: nothing moves";
  }
  ProcessResult train(const std::string& config, std::vector<std::string> extra) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                     "train",
                                     kConfigs + config,
                                     "--set",
                                     "train.max_steps=2",
                                     "--set",
                                     "data.test_limit=64",
                                     "--set",
                                     "train.checkpoint=" + dir_.path() + "/w.safetensors",
                                     "--metrics",
                                     dir_.path() + "/m.jsonl"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_process(args, dir_.path(), {"TMPDIR=" + dir_.path()});
  }
  TempDir dir_;
};

TEST_F(NoUsableGpu, OpsOnTheGpuAreAClearError) {
  ProcessResult r = train("fashion_mnist_cnn_gpu_split.yaml", {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  std::string line = r.first_err_line();
  EXPECT_NE(line.find("fashion_mnist_cnn_gpu_split.yaml: ops are placed on gpu:0 (conv1, relu1, pool1, conv2"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("but no usable GPU: "), std::string::npos) << line;
  EXPECT_NE(line.find("or set allow_soft_placement: true"), std::string::npos) << line;
}

TEST_F(NoUsableGpu, SoftPlacementMovesEveryOpToACpuAndSaysSo) {
  for (const char* config : {"fashion_mnist_cnn_gpu_split.yaml", "fashion_mnist_cnn_gpu.yaml"}) {
    ProcessResult r = train(config, {"--set", "allow_soft_placement=true"});
    EXPECT_EQ(r.exit_code, 0) << config << "\n" << r.err;
    EXPECT_NE(r.err.find("devmap: soft placement: conv1 moves from gpu:0 to cpu:0 (no usable GPU: "), std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace devmap::testing
