// configs/fashion_mnist_resnet*.yaml end to end, kept short for CI (a
// batch of 16, 800 training images, 50 steps): the split ResNet trains to
// the same losses as on one device, to the bit, and writes the same
// weights file (parameters and batch_norm state); micro-batches of a step
// are named once per batch_norm in the plan, the run log and the
// memory_plan event, and train.micro_batch_statistics refuse makes them
// an error (exit 2); pipelined schedules give the lock-step bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/graph/safetensors.h"
#include "tests/support/metrics.h"
#include "tests/support/run_process.h"
#include "tests/support/train_run.h"

namespace devmap::testing {
namespace {

constexpr int kSteps = 50;
const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
const std::vector<std::string> kShort = {
    "--set", "train.batch_size=16",      "--set", "data.train_limit=800",
    "--set", "data.test_limit=64",       "--set", "train.epochs=1",
    "--set", "train.eval_batch_size=64", "--set", "train.optimizer.schedule.warmup_steps=0"};

bool have_data() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

int64_t int64_at(const std::string& bytes, uint64_t offset) {
  int64_t v = 0;
  std::memcpy(&v, bytes.data() + offset, sizeof v);
  return v;
}

// `weights` rewritten as devmap wrote it before counts were int64: every
// tensor float32.
std::string with_float_counts(const std::string& weights) {
  const SafetensorsLayout in = parse_safetensors_header(weights, weights.size(), "weights");
  std::vector<SafetensorsTensor> tensors;
  for (const SafetensorsEntry& e : in.entries) tensors.push_back({e.name, e.shape, FileDtype::kF32});
  const SafetensorsLayout out = make_safetensors_layout(tensors, in.metadata);
  std::string file = safetensors_head(out);
  for (const SafetensorsEntry& e : in.entries) {
    const uint64_t at = in.data_start + e.begin;
    if (e.dtype == FileDtype::kF32) {
      file.append(weights, at, e.end - e.begin);
      continue;
    }
    for (uint64_t k = 0; k < e.end - e.begin; k += 8) {
      const float v = static_cast<float>(int64_at(weights, at + k));
      file.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  return file;
}

TrainRun train(const std::string& dir, const std::string& tag, const std::string& config,
               std::vector<std::string> extra) {
  extra.insert(extra.begin(), kShort.begin(), kShort.end());
  return train_run(dir, tag, kConfigs + config, extra);
}

TEST(ResnetSplit, TwoWorkersGiveTheSameLossesAndWeightsAsOneToTheBit) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  const std::vector<std::string> warmup = {"--set", "train.optimizer.schedule.warmup_steps=10"};
  std::vector<std::string> one_device = warmup;
  one_device.insert(one_device.end(), {"--set", "devices.cpu:0.threads=1"});
  const TrainRun one = train(dir.path(), "one", "fashion_mnist_resnet.yaml", one_device);
  const TrainRun two = train(dir.path(), "two", "fashion_mnist_resnet_split.yaml", warmup);
  ASSERT_EQ(one.process.exit_code, 0) << one.process.err;
  ASSERT_EQ(two.process.exit_code, 0) << two.process.err;
  ASSERT_EQ(one.losses.size(), static_cast<size_t>(kSteps)) << one.process.err;
  EXPECT_EQ(one.losses, two.losses);
  // The weights files hold the same tensors (running statistics and batch
  // counts included) with the same bytes.
  const std::string a = read_file(dir.path() + "/one/w.safetensors"), b = read_file(dir.path() + "/two/w.safetensors");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "the weights files differ";
  const SafetensorsLayout layout = read_safetensors_layout(dir.path() + "/one/w.safetensors");
  for (const char* name : {"bn1.weight", "bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked",
                           "l3b2_bn2.running_var", "l2b1_downbn.num_batches_tracked"})
    EXPECT_NE(layout.find(name), nullptr) << name;
  // Batch counts are int64 in the file, as PyTorch's buffer: one per step.
  const SafetensorsEntry* count = layout.find("bn1.num_batches_tracked");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->dtype, FileDtype::kI64);
  EXPECT_EQ(int64_at(a, layout.data_start + count->begin), kSteps);
  // The training state has optimizer state for trained parameters only.
  const SafetensorsLayout state = read_safetensors_layout(dir.path() + "/one/w.state.safetensors");
  EXPECT_NE(state.find("bn1.weight.opt0"), nullptr);
  EXPECT_EQ(state.find("bn1.running_mean.opt0"), nullptr);
  // It learns: the last 5 losses below the first 5.
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += std::stod(one.losses[static_cast<size_t>(i)]);
    last += std::stod(one.losses[static_cast<size_t>(kSteps - 1 - i)]);
  }
  EXPECT_LT(last, first);
}

// A checkpoint from before batch counts were int64 (float32 counts) still
// resumes, to the same bits as the int64 one, and the counts go on.
TEST(ResnetWeights, FloatBatchCountsFromEarlierFilesStillResume) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  const std::vector<std::string> three = {"--set", "train.max_steps=3"},
                                 five = {"--set", "train.max_steps=5", "--resume"};
  ASSERT_EQ(train(dir.path(), "now", "fashion_mnist_resnet.yaml", three).process.exit_code, 0);
  std::filesystem::create_directories(dir.path() + "/old");
  std::ofstream(dir.path() + "/old/w.safetensors", std::ios::binary)
      << with_float_counts(read_file(dir.path() + "/now/w.safetensors"));
  std::filesystem::copy_file(dir.path() + "/now/w.state.safetensors", dir.path() + "/old/w.state.safetensors");
  ASSERT_EQ(read_safetensors_layout(dir.path() + "/old/w.safetensors").find("bn1.num_batches_tracked")->dtype,
            FileDtype::kF32);
  for (const char* tag : {"now", "old"}) {
    const TrainRun r = train(dir.path(), tag, "fashion_mnist_resnet.yaml", five);
    EXPECT_EQ(r.process.exit_code, 0) << r.process.err;
  }
  const std::string now = read_file(dir.path() + "/now/w.safetensors");
  EXPECT_TRUE(now == read_file(dir.path() + "/old/w.safetensors")) << "the resumed weights files differ";
  const SafetensorsLayout layout = parse_safetensors_header(now, now.size(), "w.safetensors");
  const SafetensorsEntry* count = layout.find("l2b1_downbn.num_batches_tracked");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->dtype, FileDtype::kI64);
  EXPECT_EQ(int64_at(now, layout.data_start + count->begin), 5);
}

// Pipelined schedules keep each micro-batch's statistics its own and update
// the running statistics in micro-batch order: 1f1b and gpipe give the
// lock-step run's losses and weights file to the bit.
TEST(ResnetMicroBatches, PipelinedSchedulesGiveTheLockStepBits) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  std::map<std::string, TrainRun> runs;
  for (const char* schedule : {"none", "1f1b", "gpipe"})
    runs[schedule] = train(dir.path(), schedule, "fashion_mnist_resnet_split.yaml",
                           {"--set", "train.pipeline.micro_batches=4", "--set",
                            std::string("train.pipeline.schedule=") + schedule, "--set", "train.max_steps=6"});
  const std::string lock_step = read_file(dir.path() + "/none/w.safetensors");
  ASSERT_FALSE(lock_step.empty()) << runs["none"].process.err;
  for (const auto& [schedule, run] : runs) {
    ASSERT_EQ(run.process.exit_code, 0) << schedule << ": " << run.process.err;
    EXPECT_EQ(run.losses.size(), 6u) << schedule;
    EXPECT_EQ(run.losses, runs["none"].losses) << schedule;
    EXPECT_TRUE(read_file(dir.path() + "/" + schedule + "/w.safetensors") == lock_step) << schedule;
  }
}

TEST(ResnetMicroBatches, EachBatchNormSaysItsStatisticsAreTheMicroBatchsOrRefuses) {
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  const std::string line = "batch_norm bn1 computes its statistics over micro-batches of 4, not the step's 16";
  ProcessResult plan = run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfigs + "fashion_mnist_resnet.yaml", "--set",
                                    "train.batch_size=16", "--set", "train.pipeline.micro_batches=4"},
                                   dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find(line), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("batch_norm l3b2_bn2 computes its statistics"), std::string::npos) << plan.out;

  // A memory budget that splits the step says the same. Costs are the fixed
  // FLOPs estimate: on a fast CPU the recomputation picked by measured costs
  // meets 20 MiB alone.
  std::vector<std::string> budget_args = fixed_cost_options(dir.path());
  budget_args.insert(budget_args.begin(), {DEVMAP_COORDINATOR_BIN, "plan", kConfigs + "fashion_mnist_resnet.yaml"});
  budget_args.insert(budget_args.end(), {"--set", "train.batch_size=16", "--set", "devices.cpu:0.memory_limit=20MiB"});
  ProcessResult budget = run_process(budget_args, dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(budget.exit_code, 0) << budget.err;
  const size_t at = budget.out.find("batch_norm bn1 computes its statistics over micro-batches of ");
  ASSERT_NE(at, std::string::npos) << budget.out;
  const std::string budget_line = budget.out.substr(at, budget.out.find('\n', at) - at);
  EXPECT_TRUE(budget_line.ends_with(", not the step's 16")) << budget_line;

  const TrainRun run = train(dir.path(), "micro", "fashion_mnist_resnet.yaml",
                             {"--set", "train.pipeline.micro_batches=4", "--set", "train.max_steps=2"});
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_NE(run.process.err.find("devmap: " + line), std::string::npos) << run.process.err;
  const std::vector<std::string> events = lines_with(run.metrics, "memory_plan");
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events[0].find("\"micro_batch_statistics\":[\"" + line + "\""), std::string::npos) << events[0];

  const TrainRun whole = train(dir.path(), "whole", "fashion_mnist_resnet.yaml", {"--set", "train.max_steps=1"});
  ASSERT_EQ(whole.process.exit_code, 0) << whole.process.err;
  EXPECT_EQ(whole.process.err.find("computes its statistics"), std::string::npos) << whole.process.err;
  EXPECT_NE(lines_with(whole.metrics, "memory_plan").at(0).find("\"micro_batch_statistics\":[]"), std::string::npos);

  const TrainRun refused =
      train(dir.path(), "refused", "fashion_mnist_resnet.yaml",
            {"--set", "train.pipeline.micro_batches=4", "--set", "train.micro_batch_statistics=refuse"});
  EXPECT_EQ(refused.process.exit_code, 2) << refused.process.err;
  EXPECT_NE(refused.process.err.find(line + ", and train.micro_batch_statistics is refuse"), std::string::npos)
      << refused.process.err;
}

}  // namespace
}  // namespace devmap::testing
