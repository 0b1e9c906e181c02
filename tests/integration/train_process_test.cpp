// Launches the real coordinator and worker processes on a small slice of
// Fashion-MNIST and checks what a user would: every parameter learns at
// step 1, the loss falls, failures are reported, nothing is left behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <thread>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfig = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn.yaml";
const std::string kData = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

std::vector<std::string> small_run_args(const std::string& metrics, int steps) {
  return {DEVMAP_COORDINATOR_BIN,
          "train",
          kConfig,
          "--metrics",
          metrics,
          "--log-every",
          "1",
          "--set",
          "data.train_limit=640",
          "--set",
          "data.test_limit=200",
          "--set",
          "train.batch_size=32",
          "--set",
          "train.max_steps=" + std::to_string(steps),
          "--set",
          "devices.cpu:0.threads=1",
          "--set",
          "train.checkpoint=" + metrics + ".safetensors"};
}

// Nothing of the run is left: no segment named after its run id, and no
// run directory (socket files) under the TMPDIR the run was given.
void expect_nothing_left(const std::string& run_id, const std::string& tmpdir) {
  ASSERT_FALSE(run_id.empty());
  EXPECT_TRUE(shm_entries("devmap-" + run_id).empty()) << "segment of run " << run_id << " left in /dev/shm";
  for (const std::string& e : tree_entries(tmpdir))
    EXPECT_EQ(e.find("/devmap-", tmpdir.size()), std::string::npos) << "left behind: " << e;
}

class TrainProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kData)) GTEST_SKIP() << kData << " is absent: run scripts/setup.sh";
  }
  TempDir dir_;
  std::string metrics_ = dir_.path() + "/metrics.jsonl";
  std::string tmpdir_env_ = "TMPDIR=" + dir_.path();
};

TEST_F(TrainProcessTest, EveryParameterLearnsAtStepOneAndTheLossFalls) {
  // At lr 0.01 the reference model's loss sits near ln(10) for ~15 steps,
  // as in PyTorch, then falls.
  std::vector<std::string> args = small_run_args(metrics_, 40);
  args.push_back("--param-stats");
  ProcessResult r = run_process(args, dir_.path(), {tmpdir_env_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string log = read_file(metrics_);

  auto stats = lines_with(log, "param_stats");
  std::map<std::string, std::pair<double, double>> by_name;
  for (const auto& line : stats)
    by_name[json_field(line, "name")] = {std::stod(json_field(line, "grad_norm")),
                                         std::stod(json_field(line, "update_norm"))};
  const std::vector<std::string> expected = {"conv1.weight", "conv1.bias", "conv2.weight",  "conv2.bias",
                                             "fc1.weight",   "fc1.bias",   "logits.weight", "logits.bias"};
  ASSERT_EQ(by_name.size(), expected.size()) << log;
  for (const auto& name : expected) {
    ASSERT_TRUE(by_name.count(name)) << name << " missing in\n" << log;
    EXPECT_GT(by_name[name].first, 0.0) << name << " has a zero gradient at step 1";
    EXPECT_GT(by_name[name].second, 0.0) << name << " did not change at step 1";
  }

  auto steps = lines_with(log, "step");
  ASSERT_EQ(steps.size(), 40u);
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += std::stod(json_field(steps[static_cast<size_t>(i)], "loss"));
  for (int i = 30; i < 40; ++i) last += std::stod(json_field(steps[static_cast<size_t>(i)], "loss"));
  EXPECT_LT(last, first * 0.8) << "mean loss of steps 31-40 should be well below that of steps 1-10";

  auto done = lines_with(log, "done");
  ASSERT_EQ(done.size(), 1u);
  EXPECT_GT(std::stod(json_field(done[0], "test_accuracy")), 0.3);
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/metrics.config.yaml"));
  expect_nothing_left(json_field(lines_with(log, "start").at(0), "run_id"), dir_.path());
}

TEST_F(TrainProcessTest, TheSameSeedGivesTheSameBitsAndAnotherSeedDoesNot) {
  auto losses = [&](const std::string& tag, const std::string& seed) {
    std::string m = dir_.path() + "/" + tag + ".jsonl";
    std::vector<std::string> args = small_run_args(m, 8);
    args.insert(args.end(), {"--set", "train.seed=" + seed});
    ProcessResult r = run_process(args, dir_.path(), {tmpdir_env_});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> out;
    for (const auto& line : lines_with(read_file(m), "step")) out.push_back(json_field(line, "loss"));
    EXPECT_EQ(out.size(), 8u);
    return out;
  };
  auto a = losses("a", "5"), b = losses("b", "5"), c = losses("c", "6");
  EXPECT_EQ(a, b) << "same config and seed must give the same losses, printed to 9 digits";
  EXPECT_NE(a, c);
}

TEST_F(TrainProcessTest, AWorkerThatFailsStopsTheRunWithItsMessageAndLeavesNothing) {
  ProcessResult r = run_process(small_run_args(metrics_, 10), dir_.path(), {tmpdir_env_, "DEVMAP_TEST_FAIL_AT_STEP=3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("worker_cpu for cpu:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("injected failure at step 3"), std::string::npos) << r.err;
  auto start = lines_with(read_file(metrics_), "start");
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(json_field(start[0], "job"), "train");  // as predict's start says "predict"
  expect_nothing_left(json_field(start[0], "run_id"), dir_.path());
}

// A worker whose coordinator died before the worker started (another
// process is its parent already) exits at once instead of waiting for ever.
TEST(WorkerStartUp, ExitsWhenItsCoordinatorIsGoneBeforeItStarts) {
  TempDir dir;
  ProcessResult r = run_process({DEVMAP_WORKER_CPU_BIN, "--endpoint", "ipc://" + dir.path() + "/nobody.sock",
                                 "--device", "cpu:0", "--coordinator-pid", "1"},
                                dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cpu:0: the coordinator (pid 1) is gone before this worker started: exiting"), std::string::npos)
      << r.err;
}

// `worker_cpu --fma-peak`: the measured FP32 peak of one core, which the
// coordinator's estimate for an uncalibrated CPU device starts from.
TEST(WorkerStartUp, FmaPeakPrintsTheMeasuredPeakOfOneCore) {
  TempDir dir;
  ProcessResult r = run_process({DEVMAP_WORKER_CPU_BIN, "--fma-peak"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  char* end = nullptr;
  const double peak = std::strtod(r.out.c_str(), &end);
  EXPECT_NE(end, r.out.c_str()) << r.out;
  EXPECT_TRUE(std::isfinite(peak) && peak > 0) << r.out;
}

TEST_F(TrainProcessTest, AKilledWorkerIsReportedAndNothingIsLeft) {
  std::thread killer([&] {
    // Wait for the start line, which names the worker's pid, then kill it.
    for (int i = 0; i < 600; ++i) {
      auto start = lines_with(read_file(metrics_), "start");
      if (!start.empty()) {
        std::smatch m;
        std::string line = start[0];
        if (std::regex_search(line, m, std::regex("\"pid\":([0-9]+)"))) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          ::kill(std::stoi(m[1]), SIGKILL);
        }
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::vector<std::string> args = small_run_args(metrics_, 100000);
  args.insert(args.end(), {"--set", "train.epochs=1000"});
  ProcessResult r = run_process(args, dir_.path(), {tmpdir_env_});
  killer.join();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("was killed by signal 9"), std::string::npos) << r.err;
  auto start = lines_with(read_file(metrics_), "start");
  ASSERT_EQ(start.size(), 1u);
  expect_nothing_left(json_field(start[0], "run_id"), dir_.path());
}

}  // namespace
}  // namespace devmap::testing
