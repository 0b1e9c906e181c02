// The reference model split over 2 and 3 worker processes trains to the
// same loss at every step as one worker, equal to the bit, at 1 and at 2
// threads per device; and two runs at once never touch each other's files.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
constexpr int kSteps = 100;

struct TrainRun {
  int exit_code = -1;
  std::vector<std::string> losses;  // each step's loss as printed (9 significant digits)
  std::string run_id, err, metrics;
};

TrainRun train(const std::string& config, int threads, const std::string& dir, const std::string& tag) {
  TrainRun r;
  r.metrics = dir + "/" + tag + ".jsonl";
  std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                   "train",
                                   kConfigs + config,
                                   "--metrics",
                                   r.metrics,
                                   "--log-every",
                                   "1",
                                   "--set",
                                   "data.train_limit=1600",
                                   "--set",
                                   "data.test_limit=100",
                                   "--set",
                                   "train.batch_size=16",
                                   "--set",
                                   "train.max_steps=" + std::to_string(kSteps),
                                   "--set",
                                   "train.checkpoint=" + r.metrics + ".safetensors"};
  // Every device of the config gets the same thread count.
  int devices = config.find("3way") != std::string::npos ? 3 : config.find("split") != std::string::npos ? 2 : 1;
  for (int d = 0; d < devices; ++d)
    args.insert(args.end(), {"--set", "devices.cpu:" + std::to_string(d) + ".threads=" + std::to_string(threads)});
  std::string sub = dir + "/" + tag;
  std::filesystem::create_directories(sub);
  ProcessResult p = run_process(args, sub, {"TMPDIR=" + sub});
  r.exit_code = p.exit_code;
  r.err = p.err;
  std::istringstream in(read_file(r.metrics));
  for (std::string line; std::getline(in, line);) {
    if (json_field(line, "event") == "step") r.losses.push_back(json_field(line, "loss"));
    if (json_field(line, "event") == "start") r.run_id = json_field(line, "run_id");
    if (json_field(line, "event") == "device") {
      EXPECT_EQ(json_field(line, "transport_bytes_copied"), "0") << "CPU-to-CPU edges are read in place";
    }
  }
  return r;
}

class SplitTraining : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  }
};

TEST_P(SplitTraining, TwoAndThreeWorkersGiveTheSameLossesAsOneToTheBit) {
  const int threads = GetParam();
  TempDir dir;
  TrainRun one = train("fashion_mnist_cnn.yaml", threads, dir.path(), "one");
  TrainRun two = train("fashion_mnist_cnn_split.yaml", threads, dir.path(), "two");
  TrainRun three = train("fashion_mnist_cnn_3way.yaml", threads, dir.path(), "three");
  for (const TrainRun* r : {&one, &two, &three}) {
    ASSERT_EQ(r->exit_code, 0) << r->err;
    ASSERT_EQ(r->losses.size(), static_cast<size_t>(kSteps));
  }
  for (int s = 0; s < kSteps; ++s) {
    ASSERT_EQ(two.losses[static_cast<size_t>(s)], one.losses[static_cast<size_t>(s)]) << "2 workers, step " << s + 1;
    ASSERT_EQ(three.losses[static_cast<size_t>(s)], one.losses[static_cast<size_t>(s)]) << "3 workers, step " << s + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(ThreadsPerDevice, SplitTraining, ::testing::Values(1, 2));

TEST(ThreadCount, OneAndTwoThreadsGiveTheSameBits) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  // Kernels split their work by the shapes, never by the thread count.
  TempDir dir;
  TrainRun one = train("fashion_mnist_cnn.yaml", 1, dir.path(), "t1");
  TrainRun two = train("fashion_mnist_cnn.yaml", 2, dir.path(), "t2");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(one.losses, two.losses);
}

TEST(ConcurrentRuns, TwoRunsAtOnceKeepToTheirOwnSegmentsAndSockets) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  TrainRun a, b;
  std::thread ta([&] { a = train("fashion_mnist_cnn_split.yaml", 1, dir.path(), "a"); });
  std::thread tb([&] { b = train("fashion_mnist_cnn_split.yaml", 1, dir.path(), "b"); });
  ta.join();
  tb.join();
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(a.run_id, b.run_id);
  EXPECT_EQ(a.losses, b.losses) << "each run saw only its own tensors";
  for (const TrainRun* r : {&a, &b}) EXPECT_TRUE(shm_entries("devmap-" + r->run_id).empty());
}

}  // namespace
}  // namespace devmap::testing
