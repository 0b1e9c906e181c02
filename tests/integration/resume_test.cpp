// --resume: a run stopped at a checkpoint and resumed, even under another
// device map, continues with the very losses of a run that never stopped.
#include <gtest/gtest.h>

#include <map>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";

// Step -> loss as printed, from a metrics file.
std::map<int, std::string> losses(const std::string& metrics) {
  std::map<int, std::string> out;
  for (const std::string& line : lines_with(read_file(metrics), "step"))
    out[std::stoi(json_field(line, "step"))] = json_field(line, "loss");
  return out;
}

TEST(Resume, ContinuesBitIdenticallyUnderAnotherDeviceMap) {
  TempDir dir;
  auto train = [&](const std::string& config, const std::string& tag, int max_steps, bool resume) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN, "train", kConfigs + config,
                                     // 20 steps per epoch: the resumed run crosses an epoch boundary
                                     "--set", "data.train_limit=1280", "--set", "data.test_limit=64", "--set",
                                     "train.epochs=2", "--set", "train.max_steps=" + std::to_string(max_steps), "--set",
                                     "train.checkpoint=" + dir.path() + "/" + tag + ".safetensors", "--log-every", "1",
                                     "--metrics", dir.path() + "/" + tag + "-" + std::to_string(max_steps) + ".jsonl"};
    if (config == "fashion_mnist_cnn.yaml") args.insert(args.end(), {"--set", "devices.cpu:0.threads=1"});
    if (resume) args.push_back("--resume");
    ProcessResult r = run_process(args, dir.path(), {"TMPDIR=" + dir.path()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  train("fashion_mnist_cnn.yaml", "straight", 32, false);
  train("fashion_mnist_cnn.yaml", "stopped", 13, false);
  ProcessResult resumed = train("fashion_mnist_cnn_split.yaml", "stopped", 32, true);
  EXPECT_NE(resumed.err.find("resuming from "), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find("at step 13 (epoch 1)"), std::string::npos) << resumed.err;
  auto a = losses(dir.path() + "/straight-32.jsonl");
  auto b = losses(dir.path() + "/stopped-32.jsonl");
  ASSERT_EQ(a.size(), 32u);
  ASSERT_EQ(b.size(), 19u);  // steps 14..32
  EXPECT_EQ(b.begin()->first, 14);
  for (const auto& [step, loss] : b) EXPECT_EQ(loss, a.at(step)) << "step " << step;
}

// Step -> a field of the step events.
std::map<int, std::string> step_field(const std::string& metrics, const std::string& field) {
  std::map<int, std::string> out;
  for (const std::string& line : lines_with(read_file(metrics), "step"))
    out[std::stoi(json_field(line, "step"))] = json_field(line, field);
  return out;
}

// The learning rate is a function of the global step: a resumed run under a
// warm-up and cosine schedule logs the rates and losses of one that never
// stopped. (The cosine's length is given, so that the stopped run's smaller
// max_steps does not change it.)
TEST(Resume, ContinuesTheLearningRateSchedule) {
  TempDir dir;
  auto train = [&](const std::string& tag, int max_steps, bool resume) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                     "train",
                                     kConfigs + "fashion_mnist_mlp.yaml",
                                     "--set",
                                     "data.train_limit=640",
                                     "--set",
                                     "data.test_limit=64",
                                     "--set",
                                     "train.max_steps=" + std::to_string(max_steps),
                                     "--set",
                                     "train.optimizer.schedule.type=cosine",
                                     "--set",
                                     "train.optimizer.schedule.warmup_steps=4",
                                     "--set",
                                     "train.optimizer.schedule.steps=16",
                                     "--set",
                                     "train.checkpoint=" + dir.path() + "/" + tag + ".safetensors",
                                     "--log-every",
                                     "1",
                                     "--metrics",
                                     dir.path() + "/" + tag + "-" + std::to_string(max_steps) + ".jsonl"};
    if (resume) args.push_back("--resume");
    ProcessResult r = run_process(args, dir.path(), {"TMPDIR=" + dir.path()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  train("straight", 10, false);
  train("stopped", 3, false);
  train("stopped", 10, true);
  const auto rates = step_field(dir.path() + "/straight-10.jsonl", "lr");
  const auto resumed_rates = step_field(dir.path() + "/stopped-10.jsonl", "lr");
  const auto loss = step_field(dir.path() + "/straight-10.jsonl", "loss");
  const auto resumed_loss = step_field(dir.path() + "/stopped-10.jsonl", "loss");
  ASSERT_EQ(rates.size(), 10u);
  ASSERT_EQ(resumed_rates.size(), 7u);  // steps 4..10
  // Warm-up from lr/3 (the mlp config's rate) to the full rate at step 5,
  // then falling: the schedule is on.
  EXPECT_LT(std::stod(rates.at(1)), std::stod(rates.at(4)));
  EXPECT_GT(std::stod(rates.at(5)), std::stod(rates.at(10)));
  for (const auto& [step, lr] : resumed_rates) {
    EXPECT_EQ(lr, rates.at(step)) << "step " << step;
    EXPECT_EQ(resumed_loss.at(step), loss.at(step)) << "step " << step;
  }
}

TEST(Resume, RefusesAMissingCheckpointAndAnotherSeed) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/m.safetensors";
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                     "train",
                                     kConfigs + "fashion_mnist_mlp.yaml",
                                     "--set",
                                     "train.max_steps=2",
                                     "--set",
                                     "data.test_limit=64",
                                     "--set",
                                     "train.checkpoint=" + ckpt,
                                     "--metrics",
                                     dir.path() + "/m.jsonl"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_process(args, dir.path(), {"TMPDIR=" + dir.path()});
  };
  ProcessResult missing = run({"--resume"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("there is no checkpoint at " + ckpt), std::string::npos) << missing.err;
  ASSERT_EQ(run({}).exit_code, 0);
  ProcessResult seed = run({"--resume", "--set", "train.seed=99", "--set", "train.max_steps=4"});
  EXPECT_EQ(seed.exit_code, 2) << seed.err;
  EXPECT_NE(seed.err.find("resume with the same train.seed"), std::string::npos) << seed.err;
}

}  // namespace
}  // namespace devmap::testing
