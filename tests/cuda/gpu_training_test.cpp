// The reference model trained through the coordinator with its conv layers
// on gpu:0 and its dense layers on cpu:0 (configs/fashion_mnist_cnn_gpu_split.yaml),
// and all on gpu:0, against the CPU-only run (configs/fashion_mnist_cnn.yaml):
// the same losses at every step within a stated tolerance. The GPU's
// convolutions and GEMMs sum in another order than OpenBLAS, so the bits
// differ; over 30 steps of momentum SGD the losses stay within 2e-3
// (absolute, on losses around 0.5-2.3). Skipped without a GPU.
//
// The data is the Fashion-MNIST test set (the bundle carries only it):
// $DEVMAP_DATA_DIR or Debian's /usr/share/datasets/fashion-mnist.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "tests/cuda/gpu_test_util.h"
#include "tests/support/run_process.h"

namespace devmap::test {
namespace {

constexpr int kSteps = 30;
constexpr double kLossTolerance = 2e-3;

std::string data_dir() {
  const char* d = std::getenv("DEVMAP_DATA_DIR");
  return d != nullptr ? d : "/usr/share/datasets/fashion-mnist";
}

std::string field(const std::string& line, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("\"" + key + "\":(\"[^\"]*\"|[^,}\\]]+)"))) return "";
  std::string v = m[1];
  return v.size() >= 2 && v.front() == '"' ? v.substr(1, v.size() - 2) : v;
}

struct TrainRun {
  int exit_code = -1;
  std::string err;
  std::vector<double> losses;
};

TrainRun train(const std::string& config, const std::string& dir, const std::string& tag) {
  const std::string metrics = dir + "/" + tag + ".jsonl";
  const std::string images = data_dir() + "/t10k-images-idx3-ubyte.gz",
                    labels = data_dir() + "/t10k-labels-idx1-ubyte.gz";
  std::vector<std::string> args = {bin_dir() + "/coordinator",
                                   "train",
                                   config_dir() + "/" + config,
                                   "--metrics",
                                   metrics,
                                   "--log-every",
                                   "1",
                                   "--set",
                                   "data.train_images=" + images,
                                   "--set",
                                   "data.train_labels=" + labels,
                                   "--set",
                                   "data.test_images=" + images,
                                   "--set",
                                   "data.test_labels=" + labels,
                                   "--set",
                                   "data.train_limit=2048",
                                   "--set",
                                   "data.test_limit=256",
                                   "--set",
                                   "train.batch_size=64",
                                   "--set",
                                   "train.max_steps=" + std::to_string(kSteps),
                                   "--set",
                                   "train.checkpoint=" + metrics + ".safetensors"};
  const std::string sub = dir + "/" + tag;
  std::filesystem::create_directories(sub);
  const testing::ProcessResult p = testing::run_process(args, sub, {"TMPDIR=" + sub});
  TrainRun r;
  r.exit_code = p.exit_code;
  r.err = p.err;
  std::istringstream in(testing::read_file(metrics));
  for (std::string line; std::getline(in, line);)
    if (field(line, "event") == "step") r.losses.push_back(std::stod(field(line, "loss")));
  return r;
}

void expect_same_losses(const TrainRun& gpu, const TrainRun& cpu, const std::string& what) {
  ASSERT_EQ(gpu.exit_code, 0) << what << ": " << gpu.err;
  ASSERT_EQ(gpu.losses.size(), static_cast<size_t>(kSteps)) << what;
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(gpu.losses[static_cast<size_t>(s)], cpu.losses[static_cast<size_t>(s)], kLossTolerance)
        << what << ", step " << s + 1;
}

TEST(GpuTraining, ConvOnGpuDenseOnCpuAndAllOnGpuTrainLikeTheCpu) {
  DEVMAP_REQUIRE_GPU();
  if (!std::filesystem::exists(data_dir() + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST test set not found in " << data_dir() << " (set DEVMAP_DATA_DIR)";
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
