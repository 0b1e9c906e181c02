// The coordinator's memory does not grow with the training set: the images
// stay in their file (a gzip IDX file inflated once into an unlinked
// scratch file) and are read by index a batch at a time; only the labels
// (a byte a sample) and the visiting order stay in memory. Trains two steps
// on 6000 and on 60000 Fashion-MNIST images and compares the coordinator's
// peak resident memory (VmHWM, from the done event).
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kTrainImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
const std::string kConfig = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_mlp.yaml";

int64_t train_vm_hwm(const TempDir& dir, int64_t train_limit) {
  const std::string name = dir.path() + "/" + std::to_string(train_limit);
  ProcessResult r =
      run_process({DEVMAP_COORDINATOR_BIN, "train", kConfig, "--out-dir", name, "--set", "train.max_steps=2", "--set",
                   "data.train_limit=" + std::to_string(train_limit), "--set", "data.test_limit=256"},
                  dir.path(), {"TMPDIR=" + dir.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> done = lines_with(read_file(name + "/metrics.jsonl"), "done");
  if (done.size() != 1) return -1;
  return std::stoll(json_field(done[0], "coordinator_vm_hwm_bytes"));
}

TEST(TrainMemory, CoordinatorMemoryDoesNotGrowWithTheTrainingSet) {
  if (!std::filesystem::exists(kTrainImages)) GTEST_SKIP() << kTrainImages << " is absent: run scripts/setup.sh";
  TempDir dir;
  const int64_t hwm_small = train_vm_hwm(dir, 6000);
  const int64_t hwm_large = train_vm_hwm(dir, 60000);
  ASSERT_GT(hwm_small, 0);
  ASSERT_GT(hwm_large, 0);
  std::printf("coordinator VmHWM: %lld bytes for 6000 training images, %lld bytes for 60000 (difference %lld)\n",
              static_cast<long long>(hwm_small), static_cast<long long>(hwm_large),
              static_cast<long long>(hwm_large - hwm_small));
  // The 54000 more images are 41 MiB as bytes (165 MiB as floats); their
  // labels and visiting order 0.5 MiB.
  EXPECT_LT(hwm_large - hwm_small, int64_t{8} << 20);
  // Nothing of the scratch copies is left: they were unlinked when made.
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().rfind("devmap-data-", 0), std::string::npos) << e.path();
}

}  // namespace
}  // namespace devmap::testing
