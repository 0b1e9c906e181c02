// Offload on a GPU through the coordinator (skipped without a GPU or the
// data set): the reference CNN (configs/fashion_mnist_cnn_offload.yaml) all
// on gpu:0 under one memory_limit, with `offload: parameters` (pinned host
// memory, a copy stream, the host's optimizer) and without, trains the same
// losses, weights and optimizer state to the bit: both run the whole batch
// (the same kernels at the same shapes in the same order), and the host's
// optimizer has the GPU kernel's arithmetic. gpu:0's allocator peaks at its
// plan, within the limit, and the offloaded run plans less. The same holds
// for the GPU+CPU split with its gpu:0 offloaded, pipelined.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/cuda/gpu_run_util.h"
#include "tests/support/metrics.h"

namespace devmap::test {
namespace {

constexpr int64_t kLimit = int64_t{512} << 20;  // the whole batch fits, with or without offload

// gpu:0's "device" line of a run's metrics.
std::string gpu_device_line(const std::string& dir, const std::string& tag) {
  for (const std::string& line : testing::lines_with(testing::read_file(dir + "/" + tag + "/metrics.jsonl"), "device"))
    if (testing::json_field(line, "device") == "gpu:0") return line;
  ADD_FAILURE() << tag << ": no device line of gpu:0";
  return "";
}

// The same tensors, bit for bit, in two safetensors files (absent: both).
void expect_same_tensors(const std::string& a, const std::string& b, const std::string& what) {
  ASSERT_EQ(std::filesystem::exists(a), std::filesystem::exists(b)) << what << ": " << a << " against " << b;
  if (!std::filesystem::exists(a)) return;
  const ParamDistance d = param_distance(a, b);
  EXPECT_TRUE(d.same_bits) << what << ": largest difference " << d.max_abs;
}

// `optimizer` trains 10 steps with and without offload on gpu:0.
void offload_keeps_the_bits(const std::string& optimizer) {
  testing::TempDir dir;
  auto run = [&](const std::string& offload) {
    const std::vector<std::string> a = {"--set", "train.max_steps=10",
                                        "--set", "data.train_limit=1024",
                                        "--set", "train.optimizer.type=" + optimizer,
                                        "--set", "device_map.default=gpu:0",
                                        "--set", "devices.cpu:0.offload=none",
                                        "--set", "devices.gpu:0.memory_limit=" + std::to_string(kLimit),
                                        "--set", "devices.gpu:0.offload=" + offload};
    TrainRun r = run_coordinator("train", shipped("fashion_mnist_cnn_offload.yaml"), dir.path(), offload, a);
    EXPECT_EQ(r.exit_code, 0) << optimizer << ", offload " << offload << ": " << r.err;
    EXPECT_EQ(r.err.find("micro-batches"), std::string::npos) << "the whole batch fits: " << r.err;
    return r;
  };
  const TrainRun on = run("parameters"), off = run("none");
  if (::testing::Test::HasFailure()) return;
  ASSERT_EQ(on.losses.size(), 10u) << optimizer;
  EXPECT_EQ(on.losses, off.losses) << optimizer;
  expect_same_tensors(on.checkpoint, off.checkpoint, optimizer + ": weights");
  const std::string state = "/weights.state.safetensors";
  expect_same_tensors(dir.path() + "/parameters" + state, dir.path() + "/none" + state,
                      optimizer + ": optimizer state");
  const std::string with = gpu_device_line(dir.path(), "parameters"), without = gpu_device_line(dir.path(), "none");
  for (const std::string& line : {with, without}) {
    EXPECT_EQ(testing::json_field(line, "peak_bytes"), testing::json_field(line, "planned_bytes")) << line;
    EXPECT_LE(std::stoll(testing::json_field(line, "peak_bytes")), kLimit) << line;
  }
  // The device keeps a staging pool of 24.90 MiB (fc1's and conv2's values
  // and gradients) instead of 37.48 MiB of parameters, gradients and
  // momentum (more with Adam's two states).
  EXPECT_LT(std::stoll(testing::json_field(with, "planned_bytes")) + (int64_t{8} << 20),
            std::stoll(testing::json_field(without, "planned_bytes")))
      << with << "\n"
      << without;
}

TEST(GpuOffload, MomentumTrainsTheBitsOfTheRunWithoutIt) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  offload_keeps_the_bits("momentum");
}

TEST(GpuOffload, AdamTrainsTheBitsOfTheRunWithoutIt) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  offload_keeps_the_bits("adam");
}

// The GPU+CPU split, 2 pipelined micro-batches, gpu:0 offloaded or not:
// each of its pipeline segments fetches its own ops' parameters.
TEST(GpuOffload, APipelinedSplitKeepsItsBits) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  auto run = [&](const std::string& offload) {
    const std::vector<std::string> a = {"--set", "train.max_steps=6",
                                        "--set", "data.train_limit=1024",
                                        "--set", "train.pipeline.schedule=1f1b",
                                        "--set", "train.pipeline.micro_batches=2",
                                        "--set", "devices.gpu:0.offload=" + offload};
    TrainRun r = run_coordinator("train", shipped("fashion_mnist_cnn_gpu_split.yaml"), dir.path(), offload, a);
    EXPECT_EQ(r.exit_code, 0) << "offload " << offload << ": " << r.err;
    return r;
  };
  const TrainRun on = run("parameters"), off = run("none");
  if (::testing::Test::HasFailure()) return;
  ASSERT_EQ(on.losses.size(), 6u);
  EXPECT_EQ(on.losses, off.losses);
  expect_same_tensors(on.checkpoint, off.checkpoint, "split: weights");
  const std::string with = gpu_device_line(dir.path(), "parameters");
  EXPECT_EQ(testing::json_field(with, "peak_bytes"), testing::json_field(with, "planned_bytes")) << with;
}

}  // namespace
}  // namespace devmap::test
