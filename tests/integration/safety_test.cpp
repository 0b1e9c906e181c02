// Lose nothing, crash never (issue 14), through the real binaries: a
// /dev/shm too small for the run, outputs that are inputs, two runs on one
// checkpoint, liveness by lock, a worker that hangs in its start-up, a low
// descriptor limit, a core that does not exist, a loss that becomes NaN, and
// messages that say why. Each run is checked for its message and exit code,
// for every file that existed before it being byte-for-byte unchanged, and
// for nothing of it left in /dev/shm or its folders.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "tests/integration/safety_fixture.h"
#include "tests/support/metrics.h"
#include "tests/support/run_process.h"
#include "transport/run_cleanup.h"

namespace devmap::testing {
namespace {

// Point 1: a run whose shared memory does not fit /dev/shm says so before it
// creates anything; `plan` shows the shared memory and its budget applies.
TEST_F(Safety, SharedMemoryTooSmallIsAClearErrorAndLeavesNothing) {
  if (!can_unshare_mounts()) GTEST_SKIP() << "cannot make a mount namespace here (needs root or CAP_SYS_ADMIN)";
  const std::string listing = logs_ + "/shm-after.txt";
  // In a namespace of its own with an 8 MiB /dev/shm; afterwards, what that
  // /dev/shm holds is listed.
  const std::string wrapper =
      "mount -t tmpfs -o size=8m tmpfs /dev/shm || exit 99; \"$@\"; rc=$?; ls -A /dev/shm > " + listing + "; exit $rc";
  const auto before = snapshot(work_);
  Result r = coordinator(mlp_train(2, weights_, {"--set", "train.batch_size=2048", "--set", "data.train_limit=4096"}),
                         {}, "exec unshare -m /bin/sh -c '" + wrapper + "' sh \"$@\"");
  ASSERT_NE(r.exit_code, 99) << "could not mount a tmpfs: " << r.err;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("of shared memory (input slots"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("but /dev/shm has"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--shm-size"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(listing), "") << "left in the small /dev/shm";
  EXPECT_FALSE(fs::exists(weights_));
  expect_unchanged(before);
  expect_nothing_left(r);

  // The same need against a budget the user set, on the normal /dev/shm.
  Result b = coordinator(mlp_train(2, weights_, {"--set", "coordinator.shared_memory_limit=64KiB"}));
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_NE(b.err.find("but coordinator.shared_memory_limit is 64.0 KiB"), std::string::npos) << b.err;
  expect_nothing_left(b);

  // plan shows it, text and JSON.
  Result p = coordinator({"plan", kConfigs + "fashion_mnist_cnn_split.yaml"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(std::regex_search(p.out, std::regex("\nshared memory: [0-9.]+ [KMG]iB planned \\(input slots [^)]*"
                                                  "edge slot rings [^)]*\\), shared_memory_limit none")))
      << p.out;
  Result j = coordinator({"plan", kConfigs + "fashion_mnist_cnn_split.yaml", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"shared_memory\":{\"total_bytes\":"), std::string::npos) << j.out;
}

// Point 1: the prediction batch is capped at the input's images.
TEST_F(Safety, PredictionSlotsAreSizedByTheInput) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const std::string csv = work_ + "/three.csv";
  {
    std::ofstream f(csv);
    for (int row = 0; row < 3; ++row) {
      for (int i = 0; i < 784; ++i) f << (i ? "," : "") << (row + i) % 256;
      f << "\n";
    }
  }
  std::vector<std::string> a = predict(weights_, csv, work_ + "/p.csv");
  a[a.size() - 3] = "16777216";  // --batch
  Result r = coordinator(a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string plan = lines_with(read_file(work_ + "/predict.jsonl"), "memory_plan").at(0);
  EXPECT_EQ(json_field(plan, "reserve_batch"), "3") << plan;
  EXPECT_NE(plan.find("\"shared_memory\":{\"total_bytes\":"), std::string::npos) << plan;
  expect_nothing_left(r);
}

// Point 2: an output that is an input, or another output, is refused before
// anything is read or written.
TEST_F(Safety, OutputsThatAreInputsAreRefusedAndNothingChanges) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const std::string step_link = work_ + "/model.step-2.safetensors";
  ASSERT_TRUE(fs::exists(step_link));
  const std::string csv = work_ + "/old.csv";
  std::ofstream(csv) << "ImageId,Label\n1,7\n";
  const std::string link = work_ + "/hardlink.csv";
  fs::create_hard_link(csv, link);
  const auto before = snapshot(work_);

  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {predict(weights_, kTestImages, weights_), "output '" + weights_ + "' is the same file as weights"},
      {predict(weights_, kTestImages, step_link), "is the same file as weights"},
      {predict(weights_, csv, link), "output '" + link + "' is the same file as input '" + csv + "'"},
      {predict(work_ + "/missing.safetensors", kTestImages, csv), "missing.safetensors"},
      {predict(work_, kTestImages, csv), "--weights '" + work_ + "' is a folder"},
      {mlp_train(2, weights_, {"--metrics", step_link}), "is the same file as metrics file '" + step_link + "'"},
      {mlp_train(2, work_), "cannot write train.checkpoint '" + work_ + "': it is a folder"},
      {mlp_train(2, csv + "/model.safetensors"), "' is a file, not a folder"},
  };
  for (const Case& c : cases) {
    Result r = coordinator(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "wanted: " << c.message << "\ngot: " << r.err;
    EXPECT_EQ(r.err.find("epoch 1"), std::string::npos) << "trained before failing: " << r.err;
    expect_unchanged(before);
    expect_nothing_left(r);
  }
}

// Point 2: predictions replace the old file only when complete; a kill -9
// leaves the old file, and its temporary file goes with the next run.
TEST_F(Safety, PredictionsReplaceTheOldFileOnlyWhenComplete) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const std::string csv = work_ + "/p.csv";
  std::ofstream(csv) << "ImageId,Label\n1,7\n";
  const auto before = snapshot(work_);
  {
    std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_, DEVMAP_COORDINATOR_BIN};
    std::vector<std::string> a = predict(weights_, kTestImages, csv);
    a[a.size() - 3] = "20";  // many small batches: time to kill it midway
    argv.insert(argv.end(), a.begin(), a.end());
    BackgroundProcess p(argv, logs_);
    bool predicting = false;
    for (int i = 0; i < 20000 && !predicting; ++i) {
      predicting = p.err().find("devmap: predicting") != std::string::npos;
      std::this_thread::sleep_for(milliseconds(1));
    }
    ASSERT_TRUE(predicting) << p.err();
    ::kill(p.pid(), SIGKILL);
    EXPECT_EQ(p.wait(milliseconds(10000)), 128 + SIGKILL);
  }
  // The workers clean the run's files once their coordinator is gone.
  std::this_thread::sleep_for(milliseconds(1000));
  expect_unchanged(before);
  Result r = coordinator(predict(weights_, kTestImages, csv));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rows = read_file(csv);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 10001);
  expect_nothing_left(r);
}

// Points 2 and 8: a full disk fails the predictions with the system's reason
// and leaves the old file as it was; metrics that cannot be written stop the
// run (small tmpfs mounts in namespaces of their own).
TEST_F(Safety, FullDiskLeavesTheOldPredictionsAndStopsMetrics) {
  if (!can_unshare_mounts()) GTEST_SKIP() << "cannot make a mount namespace here (needs root or CAP_SYS_ADMIN)";
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const std::string full = work_ + "/full";
  fs::create_directories(full);
  const std::string wrapper = "mount -t tmpfs -o size=64k tmpfs " + full +
                              " || exit 99; printf \"ImageId,Label\\n1,7\\n\" > " + full +
                              "/p.csv; \"$@\"; rc=$?; cat " + full + "/p.csv > " + logs_ + "/after.csv; ls -A " + full +
                              " > " + logs_ + "/after.txt; exit $rc";
  Result r = coordinator(predict(weights_, kTestImages, full + "/p.csv"), {},
                         "exec unshare -m /bin/sh -c '" + wrapper + "' sh \"$@\"");
  ASSERT_NE(r.exit_code, 99) << "could not mount a tmpfs: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("writing predictions to '" + full + "/p.csv.tmp-"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("failed: No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(logs_ + "/after.csv"), "ImageId,Label\n1,7\n");
  EXPECT_EQ(read_file(logs_ + "/after.txt"), "p.csv\n");
  expect_nothing_left(r);

  // Metrics that cannot be written stop the run with the system's reason.
  const std::string metrics_wrapper = "mount -t tmpfs -o size=8k tmpfs " + full + " || exit 99; exec \"$@\"";
  Result m =
      coordinator(mlp_train(100, work_ + "/m.safetensors",
                            {"--set", "data.train_limit=3200", "--log-every", "1", "--metrics", full + "/m.jsonl"}),
                  {}, "exec unshare -m /bin/sh -c '" + metrics_wrapper + "' sh \"$@\"");
  ASSERT_NE(m.exit_code, 99) << "could not mount a tmpfs: " << m.err;
  EXPECT_EQ(m.exit_code, 1) << m.err;
  EXPECT_NE(m.err.find("writing metrics file '" + full + "/m.jsonl' failed: No space left on device"),
            std::string::npos)
      << m.err;
  expect_nothing_left(m);
}

// Point 2: a state file whose weights never came is pruned.
TEST_F(Safety, OrphanStateFilesArePruned) {
  const std::string orphan = work_ + "/model.step-1.state.safetensors";
  std::ofstream(orphan) << "half a checkpoint";
  Result r =
      coordinator(mlp_train(4, weights_, {"--set", "train.checkpoint_every=2", "--set", "train.keep_checkpoints=1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(work_ + "/model.step-4.state.safetensors"));
  EXPECT_FALSE(fs::exists(work_ + "/model.step-2.state.safetensors"));
  expect_nothing_left(r);
}

// Point 2: a checkpoint folder that cannot be written fails at start-up.
TEST_F(Safety, ReadOnlyCheckpointFolderFailsAtStartUp) {
  if (!can_unshare_mounts()) GTEST_SKIP() << "cannot make a mount namespace here (needs root or CAP_SYS_ADMIN)";
  const std::string ro = work_ + "/ro";
  fs::create_directories(ro);
  std::ofstream(ro + "/keep.txt") << "kept";
  const auto before = snapshot(work_);
  // Root writes through permissions, so the folder is made read-only by a
  // read-only bind mount in a namespace of its own.
  const std::string wrapper =
      "mount --bind " + ro + " " + ro + " && mount -o remount,bind,ro " + ro + " || exit 99; exec \"$@\"";
  Result r = coordinator(mlp_train(2, ro + "/model.safetensors"), {},
                         "exec unshare -m /bin/sh -c '" + wrapper + "' sh \"$@\"");
  ASSERT_NE(r.exit_code, 99) << "could not mount read-only: " << r.err;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot create a file in folder '" + ro + "': Read-only file system"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("epoch 1"), std::string::npos) << r.err;
  expect_unchanged(before);
  expect_nothing_left(r);
}

// Point 3: a second run on a checkpoint in use refuses to start and names
// the holder; the first one finishes untouched.
TEST_F(Safety, TwoRunsOnOneCheckpoint) {
  std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_, DEVMAP_COORDINATOR_BIN};
  // Long enough to be running while the second one tries; SIGINT ends it.
  std::vector<std::string> a = mlp_train(100000, weights_, {"--set", "train.epochs=10000"});
  argv.insert(argv.end(), a.begin(), a.end());
  fs::create_directories(dir_.path() + "/first");
  BackgroundProcess first(argv, dir_.path() + "/first");
  const std::string lock = weights_ + ".lock";
  bool locked = false;
  for (int i = 0; i < 20000 && !locked; ++i) {
    locked = read_file(lock).find("pid " + std::to_string(first.pid())) != std::string::npos;
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(locked) << first.err();
  const std::string first_metrics = work_ + "/train-0.jsonl";
  for (int i = 0; i < 20000 && lines_with(read_file(first_metrics), "step").empty(); ++i)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_FALSE(lines_with(read_file(first_metrics), "step").empty()) << first.err();
  Result second = coordinator(mlp_train(2, weights_));
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_TRUE(
      std::regex_search(second.err, std::regex("checkpoint '" + weights_ + "' is in use by another run \\(pid " +
                                               std::to_string(first.pid()) + " on host [^,]+, lock file")))
      << second.err;
  ::kill(first.pid(), SIGINT);
  EXPECT_EQ(first.wait(milliseconds(120000)), 128 + SIGINT) << first.err();
  EXPECT_NE(first.err().find("the newest checkpoint is " + weights_), std::string::npos) << first.err();
  EXPECT_TRUE(fs::exists(weights_));
  expect_nothing_left(second);
  Result first_result;
  first_result.pid = first.pid();
  expect_nothing_left(first_result);
}

// Point 4: a run that holds its lock is alive whatever its pid says (another
// PID namespace); once no one holds it, the next run sweeps its names.
TEST_F(Safety, SweepSparesRunsThatHoldTheirLock) {
  constexpr int kPid = 4194303;  // no process here: pid_max is at most 4194304
  ASSERT_NE(::kill(kPid, 0), 0);
  char suffix[17];  // unique, so that runs of this test side by side keep apart
  std::snprintf(suffix, sizeof suffix, "%016llx",
                static_cast<unsigned long long>(std::random_device{}()) << 32 | ::getpid());
  const std::string id = std::to_string(kPid) + "-" + suffix;
  const std::string lock = "/dev/shm/devmap-" + id + "-lock", segment = "/dev/shm/devmap-" + id + "-input";
  const std::string run_dir = work_ + "/devmap-" + id;
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  std::ofstream(segment) << "a live run's tensors";
  fs::create_directories(run_dir);
  const int marker = mark_run_dir(run_dir, id);  // as the run made its folder, locked while it lives
  ASSERT_GE(marker, 0);
  Result r = coordinator(mlp_train(1, weights_));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(segment) && fs::exists(lock) && fs::exists(run_dir)) << r.err;
  EXPECT_EQ(read_file(segment), "a live run's tensors");
  ::close(fd);  // the run is over
  ::close(marker);
  Result s = coordinator(mlp_train(1, weights_));
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_FALSE(fs::exists(segment) || fs::exists(lock) || fs::exists(run_dir)) << s.err;
  // /dev/shm is shared with every test running beside this one, so any of their
  // runs may sweep the segment first; the run directory is private to this test.
  EXPECT_NE(s.err.find("removed " + run_dir + ", left by a run whose process is gone"), std::string::npos) << s.err;
  fs::remove(segment);
  fs::remove(lock);
}

// A coordinator killed with SIGKILL before any worker could clean up for it
// (its worker never starts) leaves nothing: devmap_run_guard removes the
// run's segments, lock and socket directory once the coordinator is gone.
TEST_F(Safety, ACoordinatorKilledBeforeItsWorkersStartLeavesNothing) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const std::string fake = dir_.path() + "/fake-workers", worker_pid = dir_.path() + "/fake-worker.pid";
  fs::create_directories(fake);
  std::ofstream(fake + "/worker_cpu") << "#!/bin/sh\necho $$ > " << worker_pid << "\nexec sleep 100\n";
  fs::permissions(fake + "/worker_cpu", fs::perms::owner_all);
  std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_, "DEVMAP_WORKER_DIR=" + fake,
                                   DEVMAP_COORDINATOR_BIN};
  std::vector<std::string> a = mlp_train(2, weights_, {"--set", "faults.startup_timeout=60"});
  argv.insert(argv.end(), a.begin(), a.end());
  fs::create_directories(dir_.path() + "/killed");
  BackgroundProcess run(argv, dir_.path() + "/killed");
  const std::string prefix = "devmap-" + std::to_string(run.pid()) + "-";
  bool started = false;
  for (int i = 0; i < 20000 && !started; ++i) {
    started = !shm_entries(prefix).empty() && fs::exists(worker_pid);
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(started) << run.err();
  ::kill(run.pid(), SIGKILL);
  EXPECT_EQ(run.wait(milliseconds(10000)), 128 + SIGKILL);
  auto nothing_left = [&] {
    if (!shm_entries(prefix).empty()) return false;
    for (const std::string& p : tree_entries(work_))
      if (fs::path(p).filename().string().rfind("devmap-", 0) == 0) return false;
    return true;
  };
  bool clean = false;
  for (int i = 0; i < 3000 && !clean; ++i) {
    clean = nothing_left();
    if (!clean) std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(clean) << "left: " << ::testing::PrintToString(shm_entries(prefix));
  ::kill(std::stoi(read_file(worker_pid)), SIGKILL);
}

// Point 5: a worker that never says HELLO stops the run, naming the device
// and the phase.
TEST_F(Safety, WorkerHangingInStartUpIsStopped) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const auto before = snapshot(work_);
  const std::string fake = dir_.path() + "/fake-workers";
  fs::create_directories(fake);
  std::ofstream(fake + "/worker_cpu") << "#!/bin/sh\nexec sleep 100\n";
  fs::permissions(fake + "/worker_cpu", fs::perms::owner_all);
  const auto start = std::chrono::steady_clock::now();
  Result r = coordinator(mlp_train(2, weights_, {"--set", "faults.startup_timeout=1"}), {"DEVMAP_WORKER_DIR=" + fake});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("worker_cpu for cpu:0 \\(pid [0-9]+\\) failed: did not say HELLO "
                                                  "after it was spawned within 1.0 s \\(faults.startup_timeout\\)")))
      << r.err;
  EXPECT_LT(secs, 30) << "the deadline did not apply";
  expect_nothing_left(r);
  expect_unchanged(before);

  // The real worker, stopped between its PLAN and its READY.
  Result p =
      coordinator(mlp_train(2, weights_, {"--set", "faults.startup_timeout=1"}), {"DEVMAP_TEST_HANG_BEFORE_READY=1"});
  EXPECT_EQ(p.exit_code, 1) << p.err;
  EXPECT_TRUE(
      std::regex_search(p.err, std::regex("worker_cpu for cpu:0 \\(pid [0-9]+\\) failed: did not answer its plan "
                                          "\\(PLAN\\) with READY within 1.0 s \\(faults.startup_timeout\\)")))
      << p.err;
  expect_nothing_left(p);
  expect_unchanged(before);
}

// Point 6: too few descriptors, and a core that is not there.
TEST_F(Safety, ProcessLimitsAreCheckedAtStartUp) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const auto before = snapshot(work_);
  Result r = coordinator(mlp_train(2, weights_), {}, "ulimit -n 16 && exec \"$@\"");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("but this process may open only 16 (ulimit -n): raise the limit"), std::string::npos) << r.err;
  expect_nothing_left(r);

  Result a = coordinator(mlp_train(2, weights_, {"--set", "devices.cpu:0.affinity=[1000]"}));
  EXPECT_EQ(a.exit_code, 2) << a.err;
  EXPECT_TRUE(std::regex_search(a.err, std::regex("fashion_mnist_mlp.yaml:[0-9]+:[0-9]+: devices.cpu:0.affinity lists "
                                                  "core 1000, which this machine does not offer")))
      << a.err;
  expect_nothing_left(a);
  expect_unchanged(before);
}

// Point 7: a loss that becomes NaN stops training and leaves the good
// checkpoint; with stop_on_nonfinite false the run goes on but writes no
// checkpoint with non-finite weights.
TEST_F(Safety, NonFiniteLossStopsTrainingAndKeepsTheGoodCheckpoint) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  const std::vector<std::string> diverge = {"--resume", "--set", "train.optimizer.learning_rate=1e30", "--set",
                                            "train.checkpoint_every=1"};
  Result r = coordinator(mlp_train(8, weights_, diverge));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("the loss is (nan|infinite) at step [3-8] \\(epoch 1\\): training "
                                                  "stopped; the newest checkpoint is " +
                                                  weights_ + " \\(step [2-7]\\)")))
      << r.err;
  expect_nothing_left(r);
  // Checkpoints of steps before the loss went wrong may be written, but the
  // newest holds finite weights: predicting with it warns of nothing.
  Result ok = coordinator(predict(weights_, kTestImages, work_ + "/p.csv"));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("warning"), std::string::npos) << ok.err;

  std::vector<std::string> go_on = diverge;
  go_on.insert(go_on.end(), {"--set", "train.stop_on_nonfinite=false"});
  Result g = coordinator(mlp_train(8, weights_, go_on));
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.err.find("training goes on (train.stop_on_nonfinite is false)"), std::string::npos) << g.err;
  EXPECT_NE(g.err.find("its weights hold NaN or infinite values ("), std::string::npos) << g.err;
  expect_nothing_left(g);
  Result still = coordinator(predict(weights_, kTestImages, work_ + "/p.csv"));
  EXPECT_EQ(still.exit_code, 0) << still.err;
  EXPECT_EQ(still.err.find("warning"), std::string::npos) << still.err;

  // Predicting with weights that hold NaN warns and names them.
  std::string bytes = read_file(weights_);
  const float nan = std::nanf("");
  std::memcpy(bytes.data() + bytes.size() - sizeof nan, &nan, sizeof nan);  // the last tensor's last value
  const std::string bad = work_ + "/nan.safetensors";
  std::ofstream(bad, std::ios::binary) << bytes;
  Result p = coordinator(predict(bad, kTestImages, work_ + "/p.csv"));
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(std::regex_search(p.err, std::regex("warning: " + bad + " holds NaN or infinite values in [a-z0-9.]+")))
      << p.err;
  expect_nothing_left(p);
}

// Point 8: messages and inputs.
TEST_F(Safety, InputsAreRecognisedByContentAndMessagesSayWhy) {
  ASSERT_NO_FATAL_FAILURE(make_weights());
  // A CSV named x.CSV, and one with no extension that starts with a
  // byte-order mark.
  std::string rows;
  for (int row = 0; row < 3; ++row) {
    for (int i = 0; i < 784; ++i) rows += (i ? "," : "") + std::to_string((row * 7 + i) % 256);
    rows += "\n";
  }
  std::ofstream(work_ + "/x.CSV") << rows;
  std::ofstream(work_ + "/pixels") << "\xEF\xBB\xBF" << rows;
  const auto before = snapshot(work_);
  for (const std::string& in : {work_ + "/x.CSV", work_ + "/pixels"}) {
    Result r = coordinator(predict(weights_, in, work_ + "/p.csv"));
    EXPECT_EQ(r.exit_code, 0) << in << ": " << r.err;
    const std::string out = read_file(work_ + "/p.csv");
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4) << in;
  }
  // An output folder that cannot be made says why.
  Result w = coordinator(predict(weights_, kTestImages, work_ + "/x.CSV/p.csv"));
  EXPECT_EQ(w.exit_code, 2) << w.err;
  EXPECT_NE(w.err.find("' is a file, not a folder"), std::string::npos) << w.err;
  // A TMPDIR too long for socket paths.
  const std::string deep = work_ + "/" + std::string(100, 'd');
  fs::create_directories(deep);
  Result t = coordinator(mlp_train(1, weights_), {"TMPDIR=" + deep});
  EXPECT_EQ(t.exit_code, 2) << t.err;
  EXPECT_NE(t.err.find("TMPDIR ('" + deep + "') is too long; set TMPDIR to a short folder such as /tmp"),
            std::string::npos)
      << t.err;
  EXPECT_TRUE(fs::is_empty(deep));
  fs::remove(deep);
  expect_nothing_left(t);
  expect_unchanged(before);  // the inputs, the weights
  // predict on a model with no labels or loss op needs no --set job=predict.
  const std::string bare = work_ + "/bare.yaml";
  std::ofstream(bare) << "model:\n  ops:\n"
                         "    - {name: image, op: input, shape: [1, 28, 28]}\n"
                         "    - {name: flat, op: flatten, inputs: [image]}\n"
                         "    - {name: fc1, op: dense, inputs: [flat], units: 256}\n"
                         "    - {name: relu1, op: relu, inputs: [fc1]}\n"
                         "    - {name: logits, op: dense, inputs: [relu1], units: 10}\n"
                         "    - {name: pred, op: argmax, inputs: [logits]}\n"
                         "devices: {cpu:0: {threads: 1}}\n";
  std::vector<std::string> a = predict(weights_, kTestImages, work_ + "/p.csv");
  a[1] = bare;
  Result b = coordinator(a);
  EXPECT_EQ(b.exit_code, 0) << b.err;
  // The documented --set train.optimizer.type=adam works on every shipped config.
  for (const auto& entry : fs::directory_iterator(kConfigs)) {
    Result o = coordinator({"plan", entry.path().string(), "--set", "train.optimizer.type=adam"});
    EXPECT_EQ(o.exit_code, 0) << entry.path() << ": " << o.err;
  }
}

}  // namespace
}  // namespace devmap::testing
