// Faults, end to end with the real processes: a worker killed at a random
// moment, a hung worker, a killed coordinator, SIGTERM and SIGINT, and
// restarts. Each checks how fast the failure is noticed, that nothing of
// the run is left behind (processes, segments, socket files) and that
// training resumed from the checkpoint gives the losses of a run that never
// stopped, bit for bit as printed.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <thread>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
constexpr int kSteps = 16;  // 10 steps per epoch: runs cross an epoch boundary
constexpr int kCheckpointEvery = 4;

// The split reference model, one thread per worker, a short run.
std::vector<std::string> train_args(const std::string& dir, const std::string& tag,
                                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {DEVMAP_COORDINATOR_BIN,
                                "train",
                                kConfigs + "fashion_mnist_cnn_split.yaml",
                                "--set",
                                "data.train_limit=640",
                                "--set",
                                "data.test_limit=64",
                                "--set",
                                "train.max_steps=" + std::to_string(kSteps),
                                "--set",
                                "train.checkpoint_every=" + std::to_string(kCheckpointEvery),
                                "--set",
                                "train.checkpoint=" + dir + "/" + tag + ".safetensors",
                                "--set",
                                "devices.cpu:0.threads=1",
                                "--set",
                                "devices.cpu:1.threads=1",
                                "--log-every",
                                "1",
                                "--metrics",
                                dir + "/" + tag + ".jsonl"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Step -> loss as printed; a step logged twice (rerun after a restart)
// must have printed the same loss both times.
std::map<int, std::string> losses(const std::string& metrics) {
  std::map<int, std::string> out;
  for (const std::string& line : lines_with(read_file(metrics), "step")) {
    int step = std::stoi(json_field(line, "step"));
    std::string loss = json_field(line, "loss");
    auto [it, fresh] = out.emplace(step, loss);
    EXPECT_TRUE(fresh || it->second == loss) << "step " << step << " printed " << it->second << " and " << loss;
  }
  return out;
}

// The newest "step" number in a metrics file (0 when none yet).
int last_step(const std::string& metrics) {
  auto steps = lines_with(read_file(metrics), "step");
  return steps.empty() ? 0 : std::stoi(json_field(steps.back(), "step"));
}

bool wait_for_step(const std::string& metrics, int step, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (last_step(metrics) >= step) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return false;
}

// device -> pid of the workers of the newest attempt.
std::map<std::string, pid_t> worker_pids(const std::string& metrics) {
  return worker_pids_in(read_file(metrics));
}

// What a run of coordinator `pid` may have left: its segments and its
// socket directory (under TMPDIR, here the test's directory).
std::vector<std::string> leftovers(pid_t coordinator, const std::string& tmpdir) {
  const std::string prefix = "devmap-" + std::to_string(coordinator) + "-";
  std::vector<std::string> left = shm_entries(prefix);
  for (const std::string& p : tree_entries(tmpdir))
    if (std::filesystem::path(p).filename().string().rfind(prefix, 0) == 0) left.push_back(p);
  return left;
}

double median_step_ms(const std::string& metrics) {
  std::vector<double> v;
  for (const std::string& line : lines_with(read_file(metrics), "step"))
    v.push_back(std::stod(json_field(line, "step_ms")));
  std::sort(v.begin(), v.end());
  return v.empty() ? 100 : v[v.size() / 2];
}

// Every fault test runs lock-step and pipelined (4 micro-batches a step,
// 1f1b): everything the fault handling promises holds with several
// micro-batches in flight.
class Faults : public ::testing::TestWithParam<bool> {
 protected:
  std::vector<std::string> args(const std::string& tag, std::vector<std::string> extra = {}) const {
    if (GetParam())
      extra.insert(extra.end(), {"--set", "train.pipeline.micro_batches=4", "--set", "train.pipeline.schedule=1f1b"});
    return train_args(dir_.path(), tag, extra);
  }
  // The uninterrupted run every resumed run is compared with.
  void SetUp() override {
    ProcessResult r = run_process(args("reference"), dir_.path(), env());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    reference_ = losses(dir_.path() + "/reference.jsonl");
    ASSERT_EQ(reference_.size(), static_cast<size_t>(kSteps));
    step_ms_ = median_step_ms(dir_.path() + "/reference.jsonl");
  }
  std::vector<std::string> env() const { return {"TMPDIR=" + dir_.path()}; }

  // Resumes run `tag` to the end and checks every step it ran against the
  // reference; returns the step it resumed from.
  int resume_and_compare(const std::string& tag) {
    ProcessResult r = run_process(args(tag, {"--resume", "--metrics", dir_.path() + "/" + tag + "-resumed.jsonl"}),
                                  dir_.path(), env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.err, m, std::regex("at step ([0-9]+) \\(epoch"))) << r.err;
    int from = m.empty() ? -1 : std::stoi(m[1]);
    auto resumed = losses(dir_.path() + "/" + tag + "-resumed.jsonl");
    EXPECT_EQ(resumed.size(), static_cast<size_t>(kSteps - from)) << r.err;
    for (const auto& [step, loss] : resumed) EXPECT_EQ(loss, reference_.at(step)) << tag << " step " << step;
    return from;
  }

  TempDir dir_;
  std::map<int, std::string> reference_;
  double step_ms_ = 100;
};

// SIGKILL of each worker at a uniformly random moment of a random step,
// five times each: noticed within 2 s, nothing left, resumable.
TEST_P(Faults, WorkerKilledAtARandomMomentIsNoticedCleanedUpAndResumed) {
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("DEVMAP_FAULT_SEED")) seed = std::stoull(s);
  std::cout << "fault seed " << seed << " (set DEVMAP_FAULT_SEED to repeat); median step " << step_ms_ << " ms\n";
  RecordProperty("fault_seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const std::string device : {"cpu:0", "cpu:1"}) {
    for (int trial = 0; trial < 5; ++trial) {
      const std::string tag = "kill-" + device.substr(4) + "-" + std::to_string(trial);
      // A step after the first checkpoint, and a moment within the step
      // that follows it (uniform over its median duration).
      const int step = std::uniform_int_distribution<int>(kCheckpointEvery + 1, kSteps - 4)(rng);
      const double offset_ms = std::uniform_real_distribution<double>(0, step_ms_)(rng);
      SCOPED_TRACE(tag + ": after step " + std::to_string(step) + " + " + std::to_string(offset_ms) + " ms");
      BackgroundProcess coordinator(args(tag), dir_.path(), env());
      const std::string metrics = dir_.path() + "/" + tag + ".jsonl";
      ASSERT_TRUE(wait_for_step(metrics, step, milliseconds(60000))) << coordinator.err();
      auto pids = worker_pids(metrics);
      ASSERT_EQ(pids.size(), 2u);
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(offset_ms));
      ASSERT_EQ(::kill(pids.at(device), SIGKILL), 0);
      auto killed = Clock::now();
      int code = coordinator.wait(milliseconds(10000));
      double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
      EXPECT_NE(code, -1) << "the coordinator did not notice";
      EXPECT_NE(code, 0);
      EXPECT_LE(seconds, 2.0) << "noticed after " << seconds << " s";
      std::string err = coordinator.err();
      EXPECT_NE(err.find("for " + device + " (pid " + std::to_string(pids.at(device)) +
                         ") failed: was killed by signal 9 (Killed)"),
                std::string::npos)
          << err;
      for (const auto& [d, pid] : pids) EXPECT_TRUE(process_gone(pid)) << d << " pid " << pid << " still runs";
      EXPECT_EQ(leftovers(coordinator.pid(), dir_.path()), std::vector<std::string>{});
      int from = resume_and_compare(tag);
      EXPECT_GE(from, kCheckpointEvery);
      std::cout << "killed " << device << " " << offset_ms << " ms into step " << step + 1 << ": exit " << code
                << " after " << seconds << " s; resumed from step " << from << "\n";
    }
  }
}

TEST_P(Faults, KilledCoordinatorTakesItsWorkersAndFilesAlong) {
  BackgroundProcess coordinator(args("orphans"), dir_.path(), env());
  const std::string metrics = dir_.path() + "/orphans.jsonl";
  ASSERT_TRUE(wait_for_step(metrics, 6, milliseconds(60000))) << coordinator.err();
  auto pids = worker_pids(metrics);
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(::kill(coordinator.pid(), SIGKILL), 0);
  auto killed = Clock::now();
  EXPECT_EQ(coordinator.wait(milliseconds(5000)), 128 + SIGKILL);
  for (const auto& [device, pid] : pids)
    EXPECT_TRUE(wait_until([pid = pid] { return process_gone(pid); }, milliseconds(5000)))
        << device << " outlived its coordinator by 5 s";
  double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  EXPECT_LE(seconds, 5.0);
  // The workers remove the run's files as they go.
  EXPECT_TRUE(wait_until([&] { return leftovers(coordinator.pid(), dir_.path()).empty(); }, milliseconds(2000)));
  EXPECT_NE(coordinator.err().find("the coordinator (pid " + std::to_string(coordinator.pid()) + ") is gone"),
            std::string::npos)
      << coordinator.err();
  // And the checkpoint it had written resumes.
  EXPECT_GE(resume_and_compare("orphans"), kCheckpointEvery);
}

TEST_P(Faults, SigtermFinishesTheStepCheckpointsAndExits143) {
  BackgroundProcess coordinator(args("term"), dir_.path(), env());
  ASSERT_TRUE(wait_for_step(dir_.path() + "/term.jsonl", 6, milliseconds(60000))) << coordinator.err();
  ASSERT_EQ(::kill(coordinator.pid(), SIGTERM), 0);
  EXPECT_EQ(coordinator.wait(milliseconds(30000)), 143) << coordinator.err();
  std::string err = coordinator.err();
  EXPECT_NE(err.find("interrupted by SIGTERM at step "), std::string::npos) << err;
  EXPECT_NE(err.find("resume with: "), std::string::npos) << err;
  EXPECT_NE(err.find(" --resume"), std::string::npos) << err;
  EXPECT_EQ(leftovers(coordinator.pid(), dir_.path()), std::vector<std::string>{});
  const std::vector<std::string> stop = lines_with(read_file(dir_.path() + "/term.jsonl"), "interrupted");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(json_field(stop[0], "job"), "train");
  EXPECT_EQ(json_field(stop[0], "signal"), "SIGTERM");
  // The checkpoint is of the step it stopped at, not an older one.
  int stopped = last_step(dir_.path() + "/term.jsonl");
  EXPECT_EQ(resume_and_compare("term"), stopped);
}

TEST_P(Faults, SigintStopsWith130AndASecondOneAbortsAtOnce) {
  {
    BackgroundProcess coordinator(args("int"), dir_.path(), env());
    ASSERT_TRUE(wait_for_step(dir_.path() + "/int.jsonl", 6, milliseconds(60000))) << coordinator.err();
    ASSERT_EQ(::kill(coordinator.pid(), SIGINT), 0);
    EXPECT_EQ(coordinator.wait(milliseconds(30000)), 130) << coordinator.err();
    EXPECT_NE(coordinator.err().find("resume with: "), std::string::npos) << coordinator.err();
    EXPECT_EQ(leftovers(coordinator.pid(), dir_.path()), std::vector<std::string>{});
  }
  BackgroundProcess coordinator(args("int2"), dir_.path(), env());
  ASSERT_TRUE(wait_for_step(dir_.path() + "/int2.jsonl", 6, milliseconds(60000))) << coordinator.err();
  auto pids = worker_pids(dir_.path() + "/int2.jsonl");
  // 10 ms apart: two signals sent at once may arrive as one.
  ASSERT_EQ(::kill(coordinator.pid(), SIGINT), 0);
  std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(::kill(coordinator.pid(), SIGINT), 0);
  EXPECT_EQ(coordinator.wait(milliseconds(5000)), 130) << coordinator.err();
  for (const auto& [device, pid] : pids) EXPECT_TRUE(process_gone(pid)) << device;
  EXPECT_EQ(leftovers(coordinator.pid(), dir_.path()), std::vector<std::string>{});
}

TEST_P(Faults, StoppedWorkerIsDeclaredHungAfterTheStepTimeout) {
  BackgroundProcess coordinator(args("stop", {"--set", "faults.step_timeout=1"}), dir_.path(), env());
  const std::string metrics = dir_.path() + "/stop.jsonl";
  ASSERT_TRUE(wait_for_step(metrics, 6, milliseconds(60000))) << coordinator.err();
  auto pids = worker_pids(metrics);
  ASSERT_EQ(::kill(pids.at("cpu:1"), SIGSTOP), 0);
  auto stopped = Clock::now();
  EXPECT_EQ(coordinator.wait(milliseconds(20000)), 1) << coordinator.err();
  double seconds = std::chrono::duration<double>(Clock::now() - stopped).count();
  // The deadline is max(1 s, 10 x the expected step), which follows the
  // slowest step measured so far; plus the 50 ms watch period and slack.
  double slowest_ms = 0;
  for (const std::string& line : lines_with(read_file(metrics), "step"))
    slowest_ms = std::max(slowest_ms, std::stod(json_field(line, "step_ms")));
  EXPECT_LE(seconds, std::max(1.0, 10 * slowest_ms / 1000) + 1.0);
  std::string err = coordinator.err();
  EXPECT_NE(err.find("for cpu:1 (pid " + std::to_string(pids.at("cpu:1")) + ") failed: made no progress on step "),
            std::string::npos)
      << err;
  for (const auto& [device, pid] : pids) EXPECT_TRUE(process_gone(pid)) << device;
  EXPECT_EQ(leftovers(coordinator.pid(), dir_.path()), std::vector<std::string>{});
}

TEST_P(Faults, KernelThatNeverReturnsIsFoundThoughHeartbeatsGoOn) {
  // Wire steps count from 0: this hangs the 7th step.
  ProcessResult r = run_process(args("hang", {"--set", "faults.step_timeout=1"}), dir_.path(),
                                {"TMPDIR=" + dir_.path(), "DEVMAP_TEST_HANG_AT_STEP=6"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("failed: made no progress on step 7 for "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("its last heartbeat, 0."), std::string::npos) << "heartbeats went on: " << r.err;
}

TEST_P(Faults, SlowWorkerWhoseInstructionsFinishIsNotDeclaredHung) {
  // Every instruction of the 7th step sleeps 300 ms on both workers: the
  // step outlasts its 1 s limit several times over, yet some instruction
  // finishes every 300 ms (while one worker sleeps, the other may wait for
  // its tensors in recv).
  ProcessResult r = run_process(args("slow", {"--set", "faults.step_timeout=1"}), dir_.path(),
                                {"TMPDIR=" + dir_.path(), "DEVMAP_TEST_SLOW_AT_STEP=6:300"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string metrics = dir_.path() + "/slow.jsonl";
  double slow_ms = 0;
  for (const std::string& line : lines_with(read_file(metrics), "step"))
    if (json_field(line, "step") == "7") slow_ms = std::stod(json_field(line, "step_ms"));
  EXPECT_GT(slow_ms, 2000.0) << "the slow step did not outlast its limit: " << read_file(metrics);
  EXPECT_EQ(losses(metrics), reference_);
}

TEST_P(Faults, WorkerKilledOnceIsRestartedAndTheRunEndsWithTheSameLosses) {
  BackgroundProcess coordinator(args("restart", {"--set", "train.max_restarts=1"}), dir_.path(), env());
  const std::string metrics = dir_.path() + "/restart.jsonl";
  ASSERT_TRUE(wait_for_step(metrics, 7, milliseconds(60000))) << coordinator.err();
  ASSERT_EQ(::kill(worker_pids(metrics).at("cpu:0"), SIGKILL), 0);
  EXPECT_EQ(coordinator.wait(milliseconds(60000)), 0) << coordinator.err();
  EXPECT_NE(coordinator.err().find("restart 1 of 1"), std::string::npos) << coordinator.err();
  std::string text = read_file(metrics);
  EXPECT_EQ(lines_with(text, "restart").size(), 1u);
  ASSERT_EQ(lines_with(text, "done").size(), 1u);
  EXPECT_EQ(json_field(lines_with(text, "done")[0], "restarts"), "1");
  auto got = losses(metrics);
  EXPECT_EQ(got.size(), static_cast<size_t>(kSteps));
  for (const auto& [step, loss] : got) EXPECT_EQ(loss, reference_.at(step)) << "step " << step;
}

TEST_P(Faults, RestartsStopAtMaxRestarts) {
  ProcessResult r = run_process(args("giveup", {"--set", "train.max_restarts=2"}), dir_.path(),
                                {"TMPDIR=" + dir_.path(), "DEVMAP_TEST_FAIL_AT_STEP=9"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("gave up after 2 restarts"), std::string::npos) << r.err;
  EXPECT_EQ(lines_with(read_file(dir_.path() + "/giveup.jsonl"), "restart").size(), 2u);
  // Each attempt resumed from the checkpoint of step 8.
  EXPECT_EQ(lines_with(read_file(dir_.path() + "/giveup.jsonl"), "resume").size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Schedules, Faults, ::testing::Values(false, true),
                         [](const auto& param_info) { return param_info.param ? "Pipelined" : "LockStep"; });

TEST(FaultsHealthy, LongStepWithinItsPlannedTimeIsNotKilled) {
  // A step of 512 images takes about a second on one thread, five times the
  // step_timeout; its planned time (x10) is far longer, so it runs.
  TempDir dir;
  ProcessResult r = run_process(
      {DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn.yaml", "--set", "devices.cpu:0.threads=1",
       "--set", "train.batch_size=512", "--set", "train.max_steps=2", "--set", "data.test_limit=64", "--set",
       "faults.step_timeout=0.2", "--set", "train.checkpoint=" + dir.path() + "/m.safetensors", "--log-every", "1",
       "--metrics", dir.path() + "/m.jsonl"},
      dir.path(), {"TMPDIR=" + dir.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto steps = lines_with(read_file(dir.path() + "/m.jsonl"), "step");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_GT(std::stod(json_field(steps[0], "step_ms")), 200) << "the step was not longer than step_timeout";
}

}  // namespace
}  // namespace devmap::testing
