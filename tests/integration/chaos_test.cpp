// Chaos: 20 random signals (SIGINT, SIGTERM or SIGKILL, to the coordinator
// or to a worker) at random moments of a training that checkpoints every
// other step, each followed by --resume. Afterwards every checkpoint on disk
// loads, every step any run printed has the loss of an uninterrupted run, bit
// for bit as printed, no run crashed (SIGSEGV, SIGBUS, SIGABRT), and nothing
// of any run is left: no process, segment, socket folder, lock or temporary
// file. The seed is printed; DEVMAP_CHAOS_SEED repeats its schedule of
// signals (which ones land before a run ends depends on timing).
#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "coordinator/checkpoint/store.h"
#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
constexpr int kSteps = 30;  // 10 steps per epoch: runs cross epoch boundaries and evaluations
constexpr int kSignals = 20;

// The split reference model, one thread per worker, a checkpoint every
// other step; metrics of each run in their own file.
std::vector<std::string> train_args(const std::string& dir, const std::string& metrics, bool resume) {
  std::vector<std::string> a = {"/usr/bin/env",
                                "TMPDIR=" + dir,
                                DEVMAP_COORDINATOR_BIN,
                                "train",
                                kConfigs + "fashion_mnist_cnn_split.yaml",
                                "--set",
                                "data.train_limit=640",
                                "--set",
                                "data.test_limit=64",
                                "--set",
                                "train.epochs=3",
                                "--set",
                                "train.max_steps=" + std::to_string(kSteps),
                                "--set",
                                "train.checkpoint_every=2",
                                "--set",
                                "train.checkpoint=" + dir + "/chaos.safetensors",
                                "--set",
                                "devices.cpu:0.threads=1",
                                "--set",
                                "devices.cpu:1.threads=1",
                                "--log-every",
                                "1",
                                "--metrics",
                                metrics};
  if (resume) a.push_back("--resume");
  return a;
}

// What a metrics file holds from byte `from` on: the lines of the runs
// since then (every run appends to one file, so that each writes the same
// resolved config beside it and a temporary file a killed run left there
// is removed by the next).
std::string since(const std::string& metrics, size_t from) {
  const std::string text = read_file(metrics);
  return from < text.size() ? text.substr(from) : "";
}

// (step, loss as printed) of every step line in `text`, in order.
std::vector<std::pair<int, std::string>> losses(const std::string& text) {
  std::vector<std::pair<int, std::string>> out;
  for (const std::string& line : lines_with(text, "step"))
    out.emplace_back(std::stoi(json_field(line, "step")), json_field(line, "loss"));
  return out;
}

// What runs left in /dev/shm (segments of `pids`) and in `dir`: socket
// folders, lock files and temporary files.
std::vector<std::string> leftovers(const std::set<pid_t>& pids, const std::string& dir) {
  std::vector<std::string> left;
  for (pid_t pid : pids)
    for (const std::string& s : shm_entries("devmap-" + std::to_string(pid) + "-")) left.push_back("/dev/shm/" + s);
  for (const std::string& p : tree_entries(dir)) {
    const std::string name = fs::path(p).filename().string();
    if (name.rfind("devmap-", 0) == 0 || name.find(".tmp-") != std::string::npos || name.ends_with(".lock"))
      left.push_back(p);
  }
  return left;
}

TEST(Chaos, TwentyRandomSignalsLoseNothing) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("DEVMAP_CHAOS_SEED")) seed = std::stoull(s);
  std::cout << "chaos seed " << seed << " (set DEVMAP_CHAOS_SEED to repeat)" << std::endl;
  RecordProperty("chaos_seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  TempDir ref_dir, dir;

  // The uninterrupted run, and how long it takes.
  const auto ref_start = Clock::now();
  ProcessResult ref = run_process(train_args(ref_dir.path(), ref_dir.path() + "/ref.jsonl", false), ref_dir.path());
  const double ref_seconds = std::chrono::duration<double>(Clock::now() - ref_start).count();
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  std::map<int, std::string> reference;
  for (const auto& [step, loss] : losses(read_file(ref_dir.path() + "/ref.jsonl"))) reference[step] = loss;
  ASSERT_EQ(reference.size(), static_cast<size_t>(kSteps));

  const std::string weights = dir.path() + "/chaos.safetensors";
  CheckpointStore store(weights, 3);
  std::set<pid_t> coordinators;
  int delivered = 0, runs = 0, finished = 0;
  std::map<std::string, int> outcomes;
  while (delivered < kSignals) {
    ASSERT_LT(runs, 4 * kSignals) << "signals keep missing their runs";
    const std::string metrics = dir.path() + "/chaos.jsonl";
    const size_t from = read_file(metrics).size();
    ++runs;
    const bool resume = !store.list().empty();
    std::string tag = resume ? "resume" : "fresh";
    BackgroundProcess run(train_args(dir.path(), metrics, resume), dir.path());
    coordinators.insert(run.pid());
    // A moment anywhere in the run: its start-up, a step, a checkpoint, an
    // evaluation, its end. A resumed run has fewer steps left: its moment
    // is drawn from its share of the reference's time.
    const int64_t start_step = resume ? std::max<int64_t>(store.list().front().step, 0) : 0;
    const double share = std::max(0.2, static_cast<double>(kSteps - start_step) / kSteps);
    const double delay = std::uniform_real_distribution<double>(0, 1)(rng) * share * ref_seconds;
    const int signal = std::array<int, 3>{SIGINT, SIGTERM, SIGKILL}[std::uniform_int_distribution<int>(0, 2)(rng)];
    const int target = std::uniform_int_distribution<int>(0, 2)(rng);  // 0: the coordinator, 1 and 2: a worker
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    pid_t victim = run.pid();
    std::string who = "coordinator";
    if (target > 0) {
      auto pids = worker_pids_in(since(metrics, from));
      const std::string device = target == 1 ? "cpu:0" : "cpu:1";
      if (pids.count(device)) {
        victim = pids.at(device);
        who = "worker " + device;
      }
    }
    const bool hit = run.wait(milliseconds(0)) < 0 && ::kill(victim, signal) == 0;
    const int code = run.wait(milliseconds(60000));
    ASSERT_NE(code, -1) << "run " << runs << " did not end after " << strsignal(signal) << " to " << who;
    // Crashes are never an outcome.
    for (int crash : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE}) EXPECT_NE(code, 128 + crash) << run.err();
    if (hit) ++delivered;
    if (code == 0) ++finished;
    const std::string outcome = (hit ? std::string(strsignal(signal)) + " to " + who : "no signal (ended first)") +
                                ": exit " + std::to_string(code);
    ++outcomes[outcome];
    std::cout << "run " << runs << " (" << tag << ", signal after " << delay << " s): " << outcome << std::endl;
    // Every step any run printed has the reference's loss.
    for (const auto& [step, loss] : losses(since(metrics, from)))
      EXPECT_EQ(loss, reference.at(step)) << "run " << runs << " step " << step << "\n" << run.err();
    // The workers clean up after a killed coordinator within a moment.
    for (const auto& [device, pid] : worker_pids_in(since(metrics, from)))
      EXPECT_TRUE(wait_until([pid = pid] { return process_gone(pid); }, milliseconds(5000))) << device;
    EXPECT_TRUE(wait_until(
        [&] {
          for (const std::string& l : leftovers({run.pid()}, dir.path()))
            if (!l.ends_with(".lock") && l.find(".tmp-") == std::string::npos) return false;
          return true;
        },
        milliseconds(3000)))
        << "run " << runs << " left files: " << [&] {
             std::string names;
             for (const std::string& l : leftovers({run.pid()}, dir.path())) names += l + " ";
             return names;
           }();
    // Every checkpoint on disk loads.
    for (const CheckpointFiles& c : store.list()) EXPECT_EQ(CheckpointStore::problem(c), std::nullopt) << c.weights;
    // A run that finished starts the next series from scratch.
    if (code == 0) {
      for (const CheckpointFiles& c : store.list()) {
        fs::remove(c.weights);
        fs::remove(c.state);
      }
      fs::remove(weights);
      fs::remove(dir.path() + "/chaos.state.safetensors");
    }
  }
  // The last series runs to its end: what the signals left resumes.
  const std::string metrics = dir.path() + "/chaos.jsonl";
  const size_t from = read_file(metrics).size();
  // A run killed after its last checkpoint (of the last step) leaves this
  // one nothing to train: it resumes at the end and prints no step.
  const int64_t resume_at = store.list().empty() ? 0 : store.list().front().step;
  ProcessResult end = run_process(train_args(dir.path(), metrics, !store.list().empty()), dir.path());
  EXPECT_EQ(end.exit_code, 0) << end.err;
  const auto last = losses(since(metrics, from));
  for (const auto& [step, loss] : last) EXPECT_EQ(loss, reference.at(step)) << "final run step " << step;
  if (resume_at < kSteps) {
    ASSERT_FALSE(last.empty());
    EXPECT_EQ(last.back().first, kSteps);
  } else {
    EXPECT_TRUE(last.empty()) << "resumed at the last step " << resume_at;
  }
  EXPECT_EQ(leftovers(coordinators, dir.path()), std::vector<std::string>{});
  std::cout << "chaos seed " << seed << ": " << delivered << " signals over " << runs << " runs (" << finished
            << " finished first), then a final run to step " << kSteps << "\n";
  for (const auto& [outcome, n] : outcomes) std::cout << "  " << n << " x " << outcome << "\n";
}

}  // namespace
}  // namespace devmap::testing
