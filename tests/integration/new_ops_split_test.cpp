// tests/configs/new_ops.yaml (avg_pool2d, global_avg_pool, concat, conv2d
// with stride, dilation and groups) trains to the same loss at every step
// split over two workers as on one, to the bit; the concats join tensors
// from both devices.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

constexpr int kSteps = 20;

std::vector<std::string> losses(const std::string& dir, const std::string& tag, std::vector<std::string> sets,
                                std::string& err) {
  const std::string metrics = dir + "/" + tag + ".jsonl";
  std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                   "train",
                                   std::string(DEVMAP_SOURCE_DIR) + "/tests/configs/new_ops.yaml",
                                   "--metrics",
                                   metrics,
                                   "--log-every",
                                   "1",
                                   "--set",
                                   "train.max_steps=" + std::to_string(kSteps)};
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const std::string sub = dir + "/" + tag;
  std::filesystem::create_directories(sub);
  ProcessResult p = run_process(args, sub, {"TMPDIR=" + sub});
  err = p.err;
  EXPECT_EQ(p.exit_code, 0) << p.err;
  return step_losses_in(read_file(metrics));
}

TEST(NewOpsSplit, TwoWorkersGiveTheSameLossesAsOneToTheBit) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  std::string err_one, err_two;
  const std::vector<std::string> one = losses(dir.path(), "one", {}, err_one);
  std::vector<std::string> split = {"devices.cpu:1.threads=1"};
  for (const char* op : {"dilated", "cat", "r2", "gap", "flat", "feats", "logits", "loss", "acc"})
    split.push_back(std::string("device_map.place.") + op + "=cpu:1");
  const std::vector<std::string> two = losses(dir.path(), "two", split, err_two);
  ASSERT_EQ(one.size(), static_cast<size_t>(kSteps)) << err_one;
  ASSERT_EQ(two.size(), static_cast<size_t>(kSteps)) << err_two;
  EXPECT_EQ(one, two);
  // It learns: the mean loss of the last 5 steps is below that of the first 5 (about ln 10).
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += std::stod(one[static_cast<size_t>(i)]);
    last += std::stod(one[static_cast<size_t>(kSteps - 1 - i)]);
  }
  EXPECT_LT(last, first);
}

}  // namespace
}  // namespace devmap::testing
