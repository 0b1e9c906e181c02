// What a run tells its user, through the real binaries: results on stdout
// and progress on stderr, words that mean one thing, outputs where the user
// says (--out-dir, --checkpoint, --metrics), nothing written by a run that
// fails before its first step, each subcommand's help, and the busy
// fraction of every device.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

namespace fs = std::filesystem;

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
const std::string kData = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

// A short training of `config` (32 samples a step, `steps` steps of a 10-step
// epoch, 64 test images) with `extra` arguments; runs in `dir`.
ProcessResult short_train(const TempDir& dir, const std::string& config, int steps,
                          const std::vector<std::string>& extra) {
  std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                   "train",
                                   kConfigs + config,
                                   "--set",
                                   "data.train_limit=320",
                                   "--set",
                                   "data.test_limit=64",
                                   "--set",
                                   "train.batch_size=32",
                                   "--set",
                                   "train.epochs=2",
                                   "--set",
                                   "train.max_steps=" + std::to_string(steps)};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_process(args, dir.path(), {"TMPDIR=" + dir.path()});
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class RunOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kData)) GTEST_SKIP() << kData << " is absent: run scripts/setup.sh";
  }
  TempDir dir_;
};

TEST_F(RunOutput, ResultsGoToStdoutAndProgressToStderr) {
  const std::string out_dir = dir_.path() + "/out";
  ProcessResult r =
      short_train(dir_, "fashion_mnist_cnn.yaml", 20, {"--out-dir", out_dir, "--set", "train.checkpoint_every=10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // stdout: the epoch lines and the summary, nothing else.
  std::vector<std::string> out = lines_of(r.out);
  ASSERT_GE(out.size(), 7u) << r.out;
  EXPECT_TRUE(std::regex_match(
      out[0], std::regex(R"(epoch 1: train loss \d\.\d{4}, test loss \d\.\d{4}, test accuracy \d\.\d{4})")))
      << out[0];
  EXPECT_TRUE(std::regex_match(out[1], std::regex(R"(epoch 2: train loss .*)"))) << out[1];
  EXPECT_TRUE(std::regex_match(out[2], std::regex(R"(done, 20 steps in \d+\.\d s)"))) << out[2];
  EXPECT_TRUE(std::regex_match(out[3], std::regex(R"(device busy: cpu:0 \d+% of the step time)"))) << out[3];
  EXPECT_TRUE(std::regex_match(
      out[4],
      std::regex(
          R"(step time: measured \d+\.\d ms \(median\), predicted \d+\.\d ms from (the calibration|FLOPs estimates .*))")))
      << out[4];
  EXPECT_EQ(out[5], "weights: " + out_dir + "/fashion_mnist_cnn.safetensors");
  EXPECT_EQ(out[6], "metrics: " + out_dir + "/metrics.jsonl");
  EXPECT_EQ(r.out.find("[#"), std::string::npos) << "a progress bar on stdout";
  // stderr, not a terminal: a plain progress line every tenth of the epoch
  // (10 steps: one a step), the loss in it the running mean of the epoch.
  std::vector<std::string> progress;
  for (const std::string& l : lines_of(r.err))
    if (l.rfind("epoch 1/2 [", 0) == 0) progress.push_back(l);
  ASSERT_EQ(progress.size(), 10u) << r.err;
  EXPECT_NE(progress[0].find(" 1/10 mean loss "), std::string::npos) << progress[0];
  EXPECT_NE(progress[0].find(" img/s lr 0.01"), std::string::npos) << "the config's learning rate: " << progress[0];
  EXPECT_EQ(r.err.find("\r"), std::string::npos) << "a redrawn bar off a terminal";
  EXPECT_NE(r.err.find("devmap: outputs: checkpoint " + out_dir + "/fashion_mnist_cnn.safetensors, metrics " + out_dir +
                       "/metrics.jsonl, resolved config " + out_dir + "/metrics.config.yaml"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(out_dir + "/metrics.config.yaml"));
  // One checkpoint event per checkpoint written: steps 10 and 20 (the end).
  const std::string metrics = read_file(out_dir + "/metrics.jsonl");
  EXPECT_EQ(lines_with(metrics, "checkpoint").size(), 2u) << metrics;
  std::vector<std::string> done = lines_with(metrics, "done");
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(json_field(done[0], "job"), "train");
  EXPECT_EQ(json_field(done[0], "steps_run"), "20");
  EXPECT_EQ(json_field(done[0], "stopped_by"), "epochs");
  EXPECT_NE(done[0].find("\"device_busy\":{\"cpu:0\":"), std::string::npos) << done[0];
  // Each step event carries the step's learning rate (constant here).
  for (const std::string& step : lines_with(metrics, "step")) EXPECT_EQ(json_field(step, "lr"), "0.01") << step;

  // --log-every N: a progress line every N steps instead.
  TempDir other;
  ProcessResult every =
      short_train(other, "fashion_mnist_cnn.yaml", 10, {"--out-dir", other.path(), "--log-every", "5"});
  ASSERT_EQ(every.exit_code, 0) << every.err;
  int lines = 0;
  for (const std::string& l : lines_of(every.err)) lines += l.rfind("epoch 1/2 [", 0) == 0;
  EXPECT_EQ(lines, 2) << every.err;  // step 5, and the end
}

TEST_F(RunOutput, ResumeAndMaxStepsSayWhatTheyCover) {
  const std::string out_dir = dir_.path() + "/out";
  ProcessResult first = short_train(dir_, "fashion_mnist_cnn.yaml", 4, {"--out-dir", out_dir});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("epoch 1: train loss "), std::string::npos);
  EXPECT_NE(first.out.find(" (mean of steps 1-4 of 10), test loss"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("done, 4 steps in "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("; stopped by train.max_steps 4 (2 epochs would be 20 steps)"), std::string::npos)
      << first.out;
  EXPECT_EQ(json_field(lines_with(read_file(out_dir + "/metrics.jsonl"), "done")[0], "stopped_by"), "max_steps");

  // --resume finds the checkpoint in the out-dir, as training wrote it.
  ProcessResult resumed = short_train(dir_, "fashion_mnist_cnn.yaml", 13, {"--out-dir", out_dir, "--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("epoch 1: train loss "), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find(" (mean of steps 5-10 of 10), test loss"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("epoch 2: train loss "), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find(" (mean of steps 1-3 of 10), test loss"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("done, 9 of 13 steps (resumed at step 4) in "), std::string::npos) << resumed.out;
}

// A cosine over the run's steps needs steps after its warm-up: known once
// the data sets the steps per epoch, before any worker starts.
TEST_F(RunOutput, AWarmupThatLeavesTheCosineNoStepsIsBadInput) {
  ProcessResult r = short_train(dir_, "fashion_mnist_mlp.yaml", 4,
                                {"--set", "train.optimizer.schedule.type=cosine", "--set",
                                 "train.optimizer.schedule.warmup_steps=4", "--metrics", dir_.path() + "/m.jsonl"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.first_err_line(), kConfigs +
                                    "fashion_mnist_mlp.yaml: train.optimizer.schedule.warmup_steps 4 leaves none of "
                                    "the run's 4 steps for the cosine: lower warmup_steps, or give the cosine's "
                                    "length as train.optimizer.schedule.steps");
}

TEST_F(RunOutput, ExplicitOutputsWinOverOutDir) {
  const std::string out_dir = dir_.path() + "/out";
  const std::string weights = dir_.path() + "/mine.safetensors", metrics = dir_.path() + "/m.jsonl";
  ProcessResult r = short_train(dir_, "fashion_mnist_mlp.yaml", 2,
                                {"--out-dir", out_dir, "--checkpoint", weights, "--metrics", metrics});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(weights));
  EXPECT_TRUE(fs::exists(metrics));
  EXPECT_TRUE(fs::exists(dir_.path() + "/m.config.yaml"));
  EXPECT_FALSE(fs::exists(out_dir)) << "nothing was left for --out-dir to hold";
  // --set train.checkpoint= is the same as --checkpoint.
  ProcessResult resumed = short_train(dir_, "fashion_mnist_mlp.yaml", 3,
                                      {"--set", "train.checkpoint=" + weights, "--metrics", metrics, "--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("done, 1 of 3 steps"), std::string::npos) << resumed.out;
}

TEST_F(RunOutput, AFailureBeforeTheFirstStepWritesNoFiles) {
  const std::string out_dir = dir_.path() + "/out";
  // The worker fails as it starts: the run never reaches a step.
  ProcessResult r = short_train(dir_, "fashion_mnist_cnn.yaml", 2,
                                {"--out-dir", out_dir, "--worker-dir", dir_.path() + "/no-workers-here"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(fs::exists(out_dir + "/metrics.jsonl")) << r.err;
  EXPECT_FALSE(fs::exists(out_dir + "/metrics.config.yaml")) << r.err;
  // A failure at the first training step, after the workers started.
  ProcessResult step = run_process({DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn.yaml", "--out-dir",
                                    out_dir, "--set", "data.train_limit=64", "--set", "data.test_limit=64"},
                                   dir_.path(), {"TMPDIR=" + dir_.path(), "DEVMAP_TEST_FAIL_AT_STEP=0"});
  EXPECT_EQ(step.exit_code, 1) << step.err;
  EXPECT_FALSE(fs::exists(out_dir + "/metrics.jsonl")) << step.err;
}

TEST_F(RunOutput, ASplitWhoseDevicesWaitReportsEachDevicesBusyFraction) {
  ProcessResult r = short_train(dir_, "fashion_mnist_cnn_split.yaml", 6, {"--out-dir", dir_.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(device busy: cpu:0 (\d+)%, cpu:1 (\d+)% of the step time)")))
      << r.out;
  // Both devices worked, and neither more than the whole step; the metrics
  // carry the same fractions.
  for (int k : {1, 2}) {
    EXPECT_GT(std::stoi(m[k]), 0) << r.out;
    EXPECT_LE(std::stoi(m[k]), 100) << r.out;
  }
  const std::string done = lines_with(read_file(dir_.path() + "/metrics.jsonl"), "done").at(0);
  EXPECT_TRUE(std::regex_search(done, std::regex(R"("device_busy":\{"cpu:0":[0-9.e-]+,"cpu:1":[0-9.e-]+\})"))) << done;
}

TEST(CommandLineHelp, EachSubcommandDescribesItsOwnOptions) {
  TempDir dir;
  ProcessResult train = run_process({DEVMAP_COORDINATOR_BIN, "train", "--help"}, dir.path());
  ProcessResult predict = run_process({DEVMAP_COORDINATOR_BIN, "predict", "--help"}, dir.path());
  ProcessResult plan = run_process({DEVMAP_COORDINATOR_BIN, "plan", "--help"}, dir.path());
  ProcessResult all = run_process({DEVMAP_COORDINATOR_BIN, "--help"}, dir.path());
  for (const ProcessResult* r : {&train, &predict, &plan, &all}) EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_EQ(train.out.rfind("usage: coordinator train CONFIG", 0), 0u) << train.out;
  EXPECT_EQ(predict.out.rfind("usage: coordinator predict CONFIG", 0), 0u) << predict.out;
  EXPECT_EQ(plan.out.rfind("usage: coordinator plan CONFIG", 0), 0u) << plan.out;
  for (const char* o : {"--resume", "--checkpoint", "--out-dir", "--log-every"}) {
    EXPECT_NE(train.out.find(o), std::string::npos) << o;
    EXPECT_EQ(plan.out.find(o), std::string::npos) << o;
  }
  for (const char* o : {"--weights", "--input", "--output", "--batch", "--out-dir"})
    EXPECT_NE(predict.out.find(o), std::string::npos) << o;
  EXPECT_EQ(predict.out.find("--resume"), std::string::npos);
  EXPECT_EQ(train.out.find("--weights"), std::string::npos);
  EXPECT_NE(plan.out.find("--json"), std::string::npos);
  EXPECT_NE(all.out.find("SUBCOMMAND --help"), std::string::npos);
  // import takes an ONNX model, and only --output.
  ProcessResult import = run_process({DEVMAP_COORDINATOR_BIN, "import", "--help"}, dir.path());
  EXPECT_EQ(import.out.rfind("usage: coordinator import MODEL.onnx [options]", 0), 0u) << import.out;
  EXPECT_NE(import.out.find("--output"), std::string::npos);
  EXPECT_EQ(import.out.find("--set"), std::string::npos);
  ProcessResult exp = run_process({DEVMAP_COORDINATOR_BIN, "export", "--help"}, dir.path());
  for (const char* o : {"--weights", "--output", "--set"}) EXPECT_NE(exp.out.find(o), std::string::npos) << o;
}

// Help and the messages that say what to type next name the command the
// user ran: the program's own name (installed: devmap), or what
// scripts/launch.sh put in DEVMAP_LAUNCH_AS.
TEST(CommandLineHelp, NamesTheCommandTheUserRan) {
  TempDir dir;
  const std::string devmap = dir.path() + "/devmap";
  ASSERT_EQ(::symlink(DEVMAP_COORDINATOR_BIN, devmap.c_str()), 0);
  ProcessResult r = run_process({devmap, "--help"}, dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("usage: devmap [SUBCOMMAND] CONFIG [options]\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("Options (devmap SUBCOMMAND --help lists each one's):"), std::string::npos) << r.out;
  r = run_process({devmap, "plan", kConfigs + "fashion_mnist_cnn.yaml", "--resume"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(), "--resume is an option of train, not of plan (see devmap plan --help)");
  r = run_process({DEVMAP_COORDINATOR_BIN, "calibrate", "--help"}, dir.path(), {"DEVMAP_LAUNCH_AS=scripts/launch.sh"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("usage: scripts/launch.sh calibrate CONFIG [options]\n", 0), 0u) << r.out;
}

TEST(CommandLineHelp, TyposGetTheNearestName) {
  TempDir dir;
  const std::string config = kConfigs + "fashion_mnist_cnn.yaml";
  ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "train", config, "--out-dri", "x"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(), "unknown option '--out-dri' (did you mean '--out-dir'? see --help)");
  r = run_process({DEVMAP_COORDINATOR_BIN, "trian", config}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(),
            "unknown subcommand 'trian' (did you mean 'train'? known: train, predict, plan, calibrate, import, "
            "export)");
  r = run_process({DEVMAP_COORDINATOR_BIN, "plan", config, "--resume"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(), "--resume is an option of train, not of plan (see coordinator plan --help)");
  // A momentum optimizer lists only its own keys.
  r = run_process({DEVMAP_COORDINATOR_BIN, "plan", config, "--set", "train.optimizer.beta=0.8"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(),
            "--set train.optimizer.beta=0.8: unknown key 'beta' in train.optimizer (type momentum) (valid: type, "
            "learning_rate, weight_decay, momentum, schedule)");
  r = run_process({DEVMAP_COORDINATOR_BIN, "plan", config, "--set", "train.optimizer.beta1=0.8"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(),
            "--set train.optimizer.beta1=0.8: train.optimizer.beta1 does not apply to optimizer type 'momentum' (its "
            "keys: type, learning_rate, weight_decay, momentum, schedule)");
  // Switching the optimizer drops the keys only the old one read.
  r = run_process({DEVMAP_COORDINATOR_BIN, "plan", config, "--set", "train.optimizer.type=adam"}, dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("memory plan of "), std::string::npos);
  // An error caused by an override starts with the override.
  r = run_process({DEVMAP_COORDINATOR_BIN, "plan", config, "--set", "train.batch_size=0"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line().rfind("--set train.batch_size=0: ", 0), 0u) << r.err;
}

}  // namespace
}  // namespace devmap::testing
