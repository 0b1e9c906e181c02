// Lose nothing, part two, through the real binaries: the start-up sweep of
// what crashed runs left removes nothing without proof of being a run's own
// (a user's folder named like a run's, a live run of another PID namespace
// that shares TMPDIR but has its own /dev/shm); plan's outputs never replace
// what a run reads or weights; outputs that are devices, FIFOs or links are
// written where they are and stay what they are.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/integration/safety_fixture.h"
#include "tests/support/metrics.h"

namespace devmap::testing {
namespace {

// The pids of the processes whose environment holds `entry` ("VAR=value").
std::vector<std::string> processes_with_env(const std::string& entry) {
  std::vector<std::string> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    for (std::string var; std::getline(in, var, '\0');)
      if (var == entry) pids.push_back(pid);
  }
  return pids;
}

// Point 1's reproduction: a previous run's output folder named
// devmap-<date>-results, with its weights, in TMPDIR.
TEST_F(Safety, AUsersFolderNamedLikeARunsSurvivesTheStartUpSweep) {
  const std::string results = work_ + "/devmap-2026-12-06-results";
  fs::create_directories(results);
  { std::ofstream(results + "/w.safetensors") << "the user's weights"; }
  // Named exactly as a run's folder, but without the run's marker.
  const std::string lookalike = work_ + "/devmap-999999-0123456789abcdef";
  fs::create_directories(lookalike);
  { std::ofstream(lookalike + "/notes.txt") << "the user's notes"; }
  const auto before = snapshot(work_);
  Result r = coordinator(mlp_train(3, work_ + "/o.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("removed"), std::string::npos) << r.err;
  expect_unchanged(before);
  EXPECT_EQ(shm_entries("devmap-" + std::to_string(r.pid) + "-"), std::vector<std::string>{});
}

// A live run in another PID namespace with its own /dev/shm, sharing
// TMPDIR: a run here sweeps at its start and leaves it alone (its lock file
// is in the other /dev/shm), and it trains to its end.
TEST_F(Safety, ALiveRunOfAnotherPidNamespaceSurvivesTheSweep) {
  if (!can_unshare_mounts()) GTEST_SKIP() << "cannot make PID and mount namespaces here (needs root)";
  const std::string wrapper =
      "exec unshare --pid --fork --mount --propagation private sh -c "
      "'mount -t tmpfs tmpfs /dev/shm && \"$0\" \"$@\"' \"$@\"";
  std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_,     "/bin/sh", "-c", wrapper,
                                   "sh",           DEVMAP_COORDINATOR_BIN};
  const auto other_args = mlp_train(400, work_ + "/other.safetensors");
  argv.insert(argv.end(), other_args.begin(), other_args.end());
  fs::create_directories(logs_ + "/other");
  BackgroundProcess other(argv, logs_ + "/other");
  // Its run folder appears in the shared TMPDIR.
  std::string folder;
  for (int i = 0; i < 1000 && folder.empty(); ++i) {
    for (const auto& e : fs::directory_iterator(work_))
      if (e.path().filename().string().rfind("devmap-", 0) == 0 && e.is_directory()) folder = e.path().string();
    if (folder.empty()) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_FALSE(folder.empty()) << other.err();
  Result here = coordinator(mlp_train(2, work_ + "/here.safetensors"));
  EXPECT_EQ(here.exit_code, 0) << here.err;
  EXPECT_EQ(here.err.find("removed"), std::string::npos) << here.err;
  EXPECT_EQ(other.wait(milliseconds(120000)), 0) << other.err();
  EXPECT_TRUE(fs::exists(work_ + "/other.safetensors"));
  EXPECT_FALSE(fs::exists(folder)) << "the other run removes its own folder at its end";
}

// Point 2: --emit-map and --dot onto the config, the weights or the
// calibration cache exit 2 before anything is written.
TEST_F(Safety, PlanOutputsNeverReplaceWhatARunReadsOrWeights) {
  const std::string config = work_ + "/x.yaml", weights = work_ + "/W.safetensors";
  fs::copy_file(kConfigs + "fashion_mnist_mlp.yaml", config);
  { std::ofstream(weights) << "the user's weights"; }
  const std::string cache = work_ + "/cache/devmap/calibration.tsv";
  fs::create_directories(work_ + "/cache/devmap");
  { std::ofstream(cache) << "# devmap calibration v1\n"; }
  const auto before = snapshot(work_);
  const std::vector<std::string> cache_env = {"XDG_CACHE_HOME=" + work_ + "/cache"};
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--emit-map", config}, "--emit-map '" + config + "' is the same file as config '" + config + "'"},
      {{"--dot", config}, "--dot '" + config + "' is the same file as config '" + config + "'"},
      {{"--dot", weights},
       "--dot '" + weights + "' exists and its name says it holds weights, which --dot would replace"},
      {{"--emit-map", cache}, "--emit-map '" + cache + "' is the same file as calibration cache '" + cache + "'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"plan", config};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Result r = coordinator(args, cache_env);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  expect_unchanged(before);
}

// Point 3: an output that is a character device, a FIFO or a link is
// written where it is and stays what it is; a checkpoint, which is renamed
// into place, refuses one.
TEST_F(Safety, OutputsThatAreDevicesFifosOrLinksStayWhatTheyAre) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const std::string real = work_ + "/real.csv", link = work_ + "/link.csv", fifo = work_ + "/fifo";
  fs::create_symlink(real, link);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string from_fifo;
  std::thread reader([&] { from_fifo = read_file(fifo); });
  for (const std::string& out : {link, fifo}) {
    Result r = coordinator(predict(weights_, kTestImages, out));
    EXPECT_EQ(r.exit_code, 0) << out << ": " << r.err;
  }
  reader.join();
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::file_size(real), 68908u);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(from_fifo, read_file(real));
  const std::string null = work_ + "/null";
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "cannot make a character device here (needs root): the link and the FIFO were checked";
  }
  Result d = coordinator(predict(weights_, kTestImages, null));
  EXPECT_EQ(d.exit_code, 0) << d.err;
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device was replaced by a file";
  Result c = coordinator(mlp_train(1, null));
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_NE(c.err.find("train.checkpoint '" + null + "' is not a regular file"), std::string::npos) << c.err;
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// Point 5: a calibration killed (kill -9) or interrupted (SIGINT) while it
// measures the handoff between two processes leaves no consumer process,
// no segment and no socket folder; the interrupted one says so and exits
// 130. The cache is complete but for its link line, so that the handoff is
// all it measures.
TEST_F(Safety, ACalibrationStoppedInItsHandoffProbeLeavesNothing) {
  const std::vector<std::string> cache_env = {"XDG_CACHE_HOME=" + work_ + "/cache"};
  const std::vector<std::string> calibrate = {"calibrate", kConfigs + "fashion_mnist_mlp.yaml"};
  Result full = coordinator(calibrate, cache_env);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const std::string cache = work_ + "/cache/devmap/calibration.tsv";
  std::string kept;
  {
    std::istringstream in(read_file(cache));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("link\t", 0) != 0) kept += line + "\n";
  }
  for (const int sig : {SIGKILL, SIGINT}) {
    std::ofstream(cache, std::ios::trunc) << kept;
    std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_, cache_env[0], DEVMAP_COORDINATOR_BIN};
    argv.insert(argv.end(), calibrate.begin(), calibrate.end());
    BackgroundProcess run(argv, logs_);
    const std::string prefix = "devmap-" + std::to_string(run.pid()) + "-";
    bool probing = false;
    for (int i = 0; i < 2000 && !probing && run.wait(milliseconds(0)) < 0; ++i) {
      for (const std::string& name : shm_entries(prefix))
        if (name.find("-handoff-") != std::string::npos) probing = true;
      if (!probing) std::this_thread::sleep_for(milliseconds(2));
    }
    ASSERT_TRUE(probing) << "the handoff probe was not seen: " << run.err();
    ::kill(run.pid(), sig);
    const int code = run.wait(milliseconds(30000));
    if (sig == SIGINT) {
      EXPECT_EQ(code, 130) << run.err();
      EXPECT_NE(run.err().find("interrupted by SIGINT"), std::string::npos) << run.err();
    }
    // The guard removes a killed run's files within its 5 s grace.
    bool clean = false;
    for (int i = 0; i < 400 && !clean; ++i) {
      clean = shm_entries(prefix).empty();
      for (const std::string& p : tree_entries(work_))
        if (fs::path(p).filename().string().rfind("devmap-", 0) == 0) clean = false;
      if (!clean) std::this_thread::sleep_for(milliseconds(25));
    }
    EXPECT_TRUE(clean) << "signal " << sig << " left files of run " << run.pid();
    // No process of the run (the probe's consumer, the guard) outlives it:
    // none is left with the run's TMPDIR in its environment.
    std::vector<std::string> left;
    for (int i = 0; i < 400; ++i) {
      left = processes_with_env("TMPDIR=" + work_);
      if (left.empty()) break;
      std::this_thread::sleep_for(milliseconds(25));
    }
    EXPECT_EQ(left, std::vector<std::string>{}) << "signal " << sig;
  }
}

// Point 6: `plan` of an `auto` config of thousands of ops over 16 devices
// stops at a SIGINT (exit 130, saying so) instead of planning on.
TEST_F(Safety, PlanStopsAtAnInterrupt) {
  const std::string config = work_ + "/big.yaml";
  {
    std::ofstream out(config);
    out << "model:\n  ops:\n"
           "    - {name: image, op: input, shape: [1, 28, 28]}\n"
           "    - {name: label, op: labels, classes: 10}\n"
           "    - {name: flat, op: flatten, inputs: [image]}\n"
           "    - {name: fc0, op: dense, inputs: [flat], units: 16}\n";
    std::string prev = "fc0";
    for (int i = 0; i < 7000; ++i) {
      out << "    - {name: d" << i << ", op: dense, inputs: [" << prev << "], units: 16}\n";
      out << "    - {name: a" << i << ", op: add, inputs: [d" << i << ", " << prev << "]}\n";
      prev = "a" + std::to_string(i);
    }
    out << "    - {name: logits, op: dense, inputs: [" << prev << "], units: 10}\n"
        << "    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}\ndevices:\n";
    for (int d = 0; d < 16; ++d) out << "  cpu:" << d << ": {threads: 1}\n";
    out << "device_map: {default: auto}\n";
  }
  std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_, DEVMAP_COORDINATOR_BIN, "plan", config};
  BackgroundProcess plan(argv, logs_);
  std::this_thread::sleep_for(milliseconds(300));
  ::kill(plan.pid(), SIGINT);
  EXPECT_EQ(plan.wait(milliseconds(60000)), 130) << plan.err();
  EXPECT_NE(plan.err().find("interrupted by SIGINT"), std::string::npos) << plan.err();
}

// Point 10: two calibrations saving to one cache at once keep both's
// entries (a rerun of either measures nothing); a folder as the cache and a
// cache that cannot be written are refused before anything is measured.
TEST_F(Safety, TheCalibrationCacheKeepsConcurrentWritersAndRefusesWhatItCannotWrite) {
  const std::vector<std::string> env = {"XDG_CACHE_HOME=" + work_ + "/cache"};
  auto calibrate = [&](const std::string& config) {
    std::vector<std::string> argv = {"/usr/bin/env",         "TMPDIR=" + work_, env[0],
                                     DEVMAP_COORDINATOR_BIN, "calibrate",       kConfigs + config};
    fs::create_directories(logs_ + "/" + config);
    return std::make_unique<BackgroundProcess>(argv, logs_ + "/" + config);
  };
  auto mlp = calibrate("fashion_mnist_mlp.yaml"), cnn = calibrate("fashion_mnist_cnn.yaml");
  ASSERT_EQ(mlp->wait(milliseconds(240000)), 0) << mlp->err();
  ASSERT_EQ(cnn->wait(milliseconds(240000)), 0) << cnn->err();
  for (const char* config : {"fashion_mnist_mlp.yaml", "fashion_mnist_cnn.yaml"}) {
    Result again = coordinator({"calibrate", kConfigs + config}, env);
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(again.out.find("(0 times measured now;"), std::string::npos) << config << ": " << again.out;
  }
  // Point 9: a batch the data set cannot fill for every measured step is
  // refused, instead of recording 0 s.
  Result huge = coordinator({"calibrate", kConfigs + "fashion_mnist_mlp.yaml", "--batch-sizes", "30000"}, env);
  EXPECT_EQ(huge.exit_code, 2) << huge.err;
  EXPECT_NE(huge.err.find("calibrating batches of 30000 takes 12 steps of training samples (360000), and the data set "
                          "has 60000: calibrate batches of at most 5000 (--batch-sizes)"),
            std::string::npos)
      << huge.err;
  Result folder = coordinator({"calibrate", kConfigs + "fashion_mnist_mlp.yaml", "--calibration", work_});
  EXPECT_EQ(folder.exit_code, 2) << folder.err;
  EXPECT_EQ(folder.err.find("calibrate: cpu:0"), std::string::npos) << "measured before refusing: " << folder.err;
  EXPECT_NE(folder.err.find("cannot write calibration cache '" + work_ + "': it is a folder"), std::string::npos)
      << folder.err;
}

// Point 13: a resume that cuts the step otherwise than the checkpoint's run
// (another micro-batch count) says so.
TEST_F(Safety, AResumeThatCutsTheStepOtherwiseSaysSo) {
  Result first = coordinator(mlp_train(2, weights_));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  Result again =
      coordinator(mlp_train(4, weights_, {"--resume", "--set", "train.pipeline={schedule: none, micro_batches: 2}"}));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("was trained with each step as one batch of 32; gradient chunks of 32; 1 replica; this "
                           "run cuts it as 2 micro-batches of 16, schedule none; gradient chunks of 32; 1 replica"),
            std::string::npos)
      << again.err;
}

// Points 9 and 13: a batch_norm over [C] features needs 2 samples a batch.
// Micro-batches of one sample and a last batch of one are refused before
// anything runs (exit 2, naming the op and the fix); `micro_batches: auto`
// calibrates no batch of one, and trains.
TEST_F(Safety, BatchesTooSmallForBatchStatisticsAreRefusedAtThePlan) {
  const std::string config = work_ + "/bn.yaml";
  std::ofstream(config) << "model:\n  ops:\n"
                           "    - {name: image, op: input, shape: [1, 28, 28]}\n"
                           "    - {name: label, op: labels, classes: 10}\n"
                           "    - {name: flat, op: flatten, inputs: [image]}\n"
                           "    - {name: fc1, op: dense, inputs: [flat], units: 32}\n"
                           "    - {name: bn1, op: batch_norm, inputs: [fc1]}\n"
                           "    - {name: relu1, op: relu, inputs: [bn1]}\n"
                           "    - {name: logits, op: dense, inputs: [relu1], units: 10}\n"
                           "    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}\n"
                           "devices: {cpu:0: {threads: 1}}\n"
                           "data: {train_limit: 320, test_limit: 64}\n"
                           "train: {batch_size: 16, max_steps: 2}\n";
  const std::string bn = "batch_norm bn1 computes its statistics over each batch's [32] features, and ";
  Result micro = coordinator({"plan", config, "--set", "train.pipeline={schedule: none, micro_batches: 16}"});
  EXPECT_EQ(micro.exit_code, 2) << micro.err;
  EXPECT_NE(micro.err.find(config + ": " + bn + "micro-batches of 1 sample give it one value per channel"),
            std::string::npos)
      << micro.err;
  Result last = coordinator({"train", config, "--set", "data.train_limit=65"});
  EXPECT_EQ(last.exit_code, 2) << last.err;
  EXPECT_NE(last.err.find(bn + "the last batch of each epoch (65 training samples in batches of 16) of 1 sample"),
            std::string::npos)
      << last.err;
  Result autos = coordinator({"train", config, "--set", "train.pipeline.micro_batches=auto"},
                             {"XDG_CACHE_HOME=" + work_ + "/cache"});
  EXPECT_EQ(autos.exit_code, 0) << autos.err;
}

// Point 13: a batch larger than the data set is planned (and its slots in
// /dev/shm sized) for the samples there are.
TEST_F(Safety, ABatchLargerThanTheDataSetIsPlannedForItsSamples) {
  const std::string metrics = work_ + "/big_batch.jsonl";
  Result r = coordinator(mlp_train(1, weights_, {"--set", "train.batch_size=1000000", "--metrics", metrics}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(metrics).find("\"event\":\"memory_plan\",\"batch\":320,"), std::string::npos)
      << read_file(metrics);
}

// Point 8: `auto` placement keeps an explicit micro_batches: 1 and
// schedule: none instead of choosing its own.
TEST_F(Safety, AutoPlacementKeepsTheMicroBatchesAndScheduleTheUserSet) {
  Result r = coordinator(
      {"plan", kConfigs + "fashion_mnist_cnn_auto.yaml", "--set", "train.pipeline={schedule: none, micro_batches: 1}"},
      {"XDG_CACHE_HOME=" + work_ + "/cache"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("predicted step"), std::string::npos) << r.out;
  for (const std::string& line : lines_with(r.out, "micro-batch"))
    EXPECT_NE(line.find("1 micro-batch of 64, none"), std::string::npos) << line;
}

// Point 8: lock-step rounds (schedule none, micro_batches 2) that a budget
// forces past the rounds' cap of 256 run as lock-step micro-batches, as
// micro_batches 1 does, instead of being refused.
TEST_F(Safety, ABudgetSplitPastTheRoundsCapRunsLockStep) {
  Result r =
      coordinator({"plan", kConfigs + "fashion_mnist_cnn.yaml", "--batch", "10000", "--set",
                   "devices.cpu:0.memory_limit=54MiB", "--set", "train.pipeline={schedule: none, micro_batches: 2}"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("running 417 micro-batches: 409 of 24 and 8 of 23"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("schedule none: more micro-batches than a round takes (256), so lock-step micro-batches"),
            std::string::npos)
      << r.out;
}

// Point 11: results that cannot be written to standard output (a full
// disk) fail the run with the reason instead of exiting 0.
TEST_F(Safety, ResultsThatCannotReachStandardOutputFailTheRun) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "/dev/full is absent here";
  const std::string to_full = "exec \"$@\" > /dev/full";
  Result plan = coordinator({"plan", kConfigs + "fashion_mnist_cnn.yaml", "--json"}, {}, to_full);
  EXPECT_EQ(plan.exit_code, 1) << plan.err;
  EXPECT_NE(plan.err.find("devmap: writing the results to standard output failed"), std::string::npos) << plan.err;
  Result train = coordinator(mlp_train(2, weights_), {}, to_full);
  EXPECT_EQ(train.exit_code, 1) << train.err;
  EXPECT_NE(train.err.find("devmap: writing the results to standard output failed"), std::string::npos) << train.err;
  expect_nothing_left(train);
}

}  // namespace
}  // namespace devmap::testing
