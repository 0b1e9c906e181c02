// Offload end to end (configs/fashion_mnist_cnn_offload.yaml): under the
// same memory_limit, the run with the parameters offloaded (the whole batch
// of 64) and the run without (2 micro-batches of 32, as the plan decides)
// write the same losses, weights and optimizer state tensors to the bit; each
// worker's allocator peaks at its plan, which shows the staging pool on the
// device and the offloaded bytes on the host. The pipelined two-way split
// with both devices offloaded keeps its bits too, and so does a resumed run.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfig = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_offload.yaml";
const std::string kTrainImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

struct Trained {
  std::string out, err, metrics, weights, state;
};

Trained train(const TempDir& dir, const std::string& offload) {
  const std::string sub = dir.path() + "/" + offload;
  std::filesystem::create_directories(sub);
  ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "train", kConfig, "--out-dir", sub, "--log-every", "1",
                                 "--set", "devices.cpu:0.offload=" + offload, "--set", "train.max_steps=6", "--set",
                                 "data.train_limit=640", "--set", "data.test_limit=128"},
                                sub, {"TMPDIR=" + sub});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Trained{r.out, r.err, read_file(sub + "/metrics.jsonl"),
                 read_file(sub + "/fashion_mnist_cnn_offload.safetensors"),
                 read_file(sub + "/fashion_mnist_cnn_offload.state.safetensors")};
}

// A safetensors file's tensor data: what follows its 8-byte header length
// and its header.
std::string tensor_bytes(const std::string& file) {
  uint64_t header = 0;
  if (file.size() < sizeof header) return {};
  std::memcpy(&header, file.data(), sizeof header);
  return file.size() < sizeof header + header ? std::string() : file.substr(sizeof header + header);
}

TEST(OffloadTraining, TrainsTheBitsOfTheRunWithoutItUnderTheSameLimit) {
  if (!std::filesystem::exists(kTrainImages)) GTEST_SKIP() << kTrainImages << " is absent: run scripts/setup.sh";
  TempDir dir;
  const Trained on = train(dir, "parameters"), off = train(dir, "none");
  ASSERT_FALSE(::testing::Test::HasFailure());
  // The limit splits the run without offload, not the one with it.
  EXPECT_EQ(on.err.find("micro-batches"), std::string::npos) << on.err;
  EXPECT_NE(off.err.find("running 2 micro-batches of 32"), std::string::npos) << off.err;
  const std::vector<std::string> a = step_losses_in(on.metrics), b = step_losses_in(off.metrics);
  EXPECT_EQ(a.size(), 6u) << on.metrics;
  EXPECT_EQ(a, b);
  EXPECT_FALSE(on.weights.empty());
  EXPECT_TRUE(on.weights == off.weights) << "weights files differ";
  // The state file's header records how the steps were split; its tensors
  // (the momentum) must match to the bit.
  EXPECT_EQ(on.state.size(), off.state.size());
  EXPECT_TRUE(tensor_bytes(on.state) == tensor_bytes(off.state)) << "optimizer states differ";
  for (const Trained* run : {&on, &off}) {
    const auto devices = lines_with(run->metrics, "device");
    ASSERT_EQ(devices.size(), 1u) << run->metrics;
    EXPECT_EQ(json_field(devices[0], "peak_bytes"), json_field(devices[0], "planned_bytes")) << devices[0];
    EXPECT_LE(std::stoll(json_field(devices[0], "peak_bytes")), int64_t{58} << 20) << devices[0];
  }
}

// Both devices of the two-way split offloaded, 2 pipelined micro-batches a
// step: each pipeline segment fetches its own ops' parameters.
TEST(OffloadTraining, APipelinedSplitKeepsItsBits) {
  if (!std::filesystem::exists(kTrainImages)) GTEST_SKIP() << kTrainImages << " is absent: run scripts/setup.sh";
  TempDir dir;
  auto run = [&](const std::string& offload) {
    const std::string sub = dir.path() + "/" + offload;
    std::filesystem::create_directories(sub);
    ProcessResult r = run_process(
        {DEVMAP_COORDINATOR_BIN, "train", std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml",
         "--out-dir", sub, "--log-every", "1", "--set", "train.max_steps=4", "--set", "data.train_limit=640", "--set",
         "data.test_limit=128", "--set", "train.pipeline.micro_batches=2", "--set", "devices.cpu:0.offload=" + offload,
         "--set", "devices.cpu:1.offload=" + offload},
        sub, {"TMPDIR=" + sub});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::make_pair(read_file(sub + "/metrics.jsonl"), read_file(sub + "/fashion_mnist_cnn_split.safetensors"));
  };
  const auto on = run("parameters"), off = run("none");
  EXPECT_EQ(step_losses_in(on.first).size(), 4u);
  EXPECT_EQ(step_losses_in(on.first), step_losses_in(off.first));
  EXPECT_FALSE(on.second.empty());
  EXPECT_TRUE(on.second == off.second) << "weights files differ";
  const auto devices = lines_with(on.first, "device");
  ASSERT_EQ(devices.size(), 2u);
  for (const std::string& d : devices) EXPECT_EQ(json_field(d, "peak_bytes"), json_field(d, "planned_bytes")) << d;
}

// A resumed run loads the weights and the optimizer state into the host
// memory of the offloaded parameters: 3 steps, then --resume to 6, write
// the losses and weights of 6 steps in one run.
TEST(OffloadTraining, AResumedRunContinuesItsBits) {
  if (!std::filesystem::exists(kTrainImages)) GTEST_SKIP() << kTrainImages << " is absent: run scripts/setup.sh";
  TempDir dir;
  auto run = [&](const std::string& name, const std::string& steps, bool resume) {
    const std::string sub = dir.path() + "/" + name;
    std::filesystem::create_directories(sub);
    std::vector<std::string> args{DEVMAP_COORDINATOR_BIN,
                                  "train",
                                  kConfig,
                                  "--out-dir",
                                  sub,
                                  "--set",
                                  "train.max_steps=" + steps,
                                  "--set",
                                  "data.train_limit=640",
                                  "--set",
                                  "data.test_limit=128"};
    args.insert(args.end(), {"--log-every", "1"});
    if (resume) args.push_back("--resume");
    ProcessResult r = run_process(args, sub, {"TMPDIR=" + sub});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return sub;
  };
  const std::string straight = run("straight", "6", false);
  run("stopped", "3", false);
  const std::string resumed = run("stopped", "6", true);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::vector<std::string> a = step_losses_in(read_file(straight + "/metrics.jsonl"));
  std::vector<std::string> b = step_losses_in(read_file(resumed + "/metrics.jsonl"));  // both runs append
  EXPECT_EQ(a.size(), 6u);
  EXPECT_EQ(a, b);
  const std::string w = read_file(straight + "/fashion_mnist_cnn_offload.safetensors");
  EXPECT_FALSE(w.empty());
  EXPECT_TRUE(w == read_file(resumed + "/fashion_mnist_cnn_offload.safetensors")) << "weights files differ";
}

TEST(OffloadTraining, ThePlanShowsTheStagingPoolAndTheHostBytes) {
  TempDir dir;
  ProcessResult j = run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfig, "--json"}, dir.path(), {});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  // fc1: 1024 x 3136 weights and 1024 biases; conv2: 64 x 32 x 5 x 5 and 64;
  // conv1: 32 x 1 x 5 x 5 and 32; logits: 10 x 1024 and 10 (64-byte rounded).
  auto bytes = [](int64_t floats) { return (floats * 4 + 63) / 64 * 64; };
  const int64_t fc1 = bytes(1024 * 3136) + bytes(1024), conv2 = bytes(64 * 32 * 25) + bytes(64);
  const int64_t conv1 = bytes(32 * 25) + bytes(32), logits = bytes(10 * 1024) + bytes(10);
  // The pool: the two largest shares (values and gradients) together.
  EXPECT_EQ(json_field(j.out, "offload_staging_bytes"), std::to_string(2 * fc1 + 2 * conv2)) << j.out;
  // The host: values, gradients and momentum.
  EXPECT_EQ(json_field(j.out, "offloaded_host_bytes"), std::to_string(3 * (fc1 + conv2 + conv1 + logits)));
  EXPECT_EQ(json_field(j.out, "params_bytes"), "0");
  ProcessResult text = run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfig}, dir.path(), {});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* want : {"offload: parameters, gradients and optimizer state in host memory (outside the limit): ",
                           "    fc1: 36.76 MiB", "offload staging pool on the device (the two largest ops' shares): ",
                           "cpu:0: 50.85 MiB planned, memory_limit 58.00 MiB"})
    EXPECT_NE(text.out.find(want), std::string::npos) << want << "\n" << text.out;
}

}  // namespace
}  // namespace devmap::testing
