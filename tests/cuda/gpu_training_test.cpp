// The reference model trained through the coordinator with its conv layers
// on gpu:0 and its dense layers on cpu:0 (configs/fashion_mnist_cnn_gpu_split.yaml),
// and all on gpu:0, against the CPU-only run (configs/fashion_mnist_cnn.yaml):
// the same losses at every step within a stated tolerance. The GPU's
// convolutions and GEMMs sum in another order than OpenBLAS, so the bits
// differ; over 30 steps of momentum SGD the losses stay within 2e-3
// (absolute, on losses around 0.5-2.3). Skipped without a GPU.
#include <gtest/gtest.h>

#include "tests/cuda/gpu_run_util.h"

namespace devmap::test {
namespace {

constexpr int kSteps = 30;
constexpr double kLossTolerance = 2e-3;

TrainRun train(const std::string& config, const std::string& dir, const std::string& tag) {
  return run_coordinator("train", config_dir() + "/" + config, dir, tag,
                         {"--set", "data.train_limit=2048", "--set", "train.batch_size=64", "--set",
                          "train.max_steps=" + std::to_string(kSteps)});
}

void expect_same_losses(const TrainRun& gpu, const TrainRun& cpu, const std::string& what) {
  ASSERT_EQ(gpu.exit_code, 0) << what << ": " << gpu.err;
  ASSERT_EQ(gpu.losses.size(), static_cast<size_t>(kSteps)) << what;
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(gpu.losses[static_cast<size_t>(s)], cpu.losses[static_cast<size_t>(s)], kLossTolerance)
        << what << ", step " << s + 1;
}

TEST(GpuTraining, ConvOnGpuDenseOnCpuAndAllOnGpuTrainLikeTheCpu) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  const TrainRun cpu = train("fashion_mnist_cnn.yaml", dir.path(), "cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  ASSERT_EQ(cpu.losses.size(), static_cast<size_t>(kSteps));
  expect_same_losses(train("fashion_mnist_cnn_gpu_split.yaml", dir.path(), "split"), cpu,
                     "conv on gpu:0, dense on cpu:0");
  expect_same_losses(train("fashion_mnist_cnn_gpu.yaml", dir.path(), "gpu"), cpu, "all on gpu:0");
}

}  // namespace
}  // namespace devmap::test
