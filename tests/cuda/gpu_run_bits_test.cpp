// Training runs through the coordinator on a GPU, compared with the CPU
// and with each other (skipped without a GPU or the data set):
// - the ResNet (batch_norm, residual adds, strided and 1x1 convolutions,
//   global average pooling) all on gpu:0 against cpu:0, losses within a
//   stated tolerance;
// - split GPU+CPU and all-GPU: 2 pipelined micro-batches against 2
//   lock-step micro-batches of the same size (the same bits: the same
//   kernels at the same shapes in the same order), and against the whole
//   batch (cuDNN and cuBLAS choose by shape, the batch included: the
//   distance is reported, not asserted; docs/GPU.md);
// - an odd gradient_chunk (7), on the reference CNN and on a model whose
//   chunks start 4 bytes past a 16-byte boundary, against the CPU's runs;
// - the ops and optimizers the reference models lack (layer_norm, avg_pool,
//   gelu, leaky_relu, sigmoid, tanh, softmax, mse_loss; adam and sgd), and
//   batch_norm, all on gpu:0 against cpu:0.
#include <gtest/gtest.h>

#include "tests/cuda/gpu_run_util.h"

namespace devmap::test {
namespace {

void expect_close_losses(const TrainRun& gpu, const TrainRun& cpu, size_t steps, double tolerance,
                         const std::string& what) {
  ASSERT_EQ(cpu.exit_code, 0) << what << " (cpu): " << cpu.err;
  ASSERT_EQ(gpu.exit_code, 0) << what << " (gpu): " << gpu.err;
  ASSERT_EQ(cpu.losses.size(), steps) << what;
  ASSERT_EQ(gpu.losses.size(), steps) << what;
  for (size_t s = 0; s < steps; ++s) EXPECT_NEAR(gpu.losses[s], cpu.losses[s], tolerance) << what << ", step " << s + 1;
}

// 20 steps of momentum SGD with batch_norm: the GPU's convolutions sum in
// another order, and batch_norm's normalisation amplifies it a little.
TEST(GpuResNet, AllOnGpuTrainsLikeTheCpu) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  const std::vector<std::string> common = {"--set", "train.batch_size=32",  "--set", "train.max_steps=20",
                                           "--set", "data.train_limit=1024"};
  const TrainRun cpu = run_coordinator("train", shipped("fashion_mnist_resnet.yaml"), dir.path(), "cpu", common);
  std::vector<std::string> on_gpu = common;
  for (const std::string& a : all_on_gpu()) on_gpu.push_back(a);
  const TrainRun gpu = run_coordinator("train", shipped("fashion_mnist_resnet.yaml"), dir.path(), "gpu", on_gpu);
  expect_close_losses(gpu, cpu, 20, 5e-3, "ResNet, all on gpu:0 against cpu:0");
}

// Pipelined against lock-step micro-batches of 32 (bits), and against the
// whole batch of 64 (the distance, reported).
void micro_batches_compared(const std::string& config, const std::vector<std::string>& placement) {
  testing::TempDir dir;
  auto run = [&](const std::string& tag, const std::string& schedule, int micro_batches) {
    std::vector<std::string> a = {"--set", "train.batch_size=64",
                                  "--set", "train.max_steps=20",
                                  "--set", "data.train_limit=2048",
                                  "--set", "train.pipeline.schedule=" + schedule,
                                  "--set", "train.pipeline.micro_batches=" + std::to_string(micro_batches)};
    a.insert(a.end(), placement.begin(), placement.end());
    TrainRun r = run_coordinator("train", shipped(config), dir.path(), tag, a);
    EXPECT_EQ(r.exit_code, 0) << config << ", " << tag << ": " << r.err;
    return r;
  };
  const TrainRun pipelined = run("pipelined", "1f1b", 2), lock_step = run("lock-step", "none", 2),
                 whole = run("whole", "none", 1);
  if (::testing::Test::HasFailure()) return;
  const ParamDistance same = param_distance(pipelined.checkpoint, lock_step.checkpoint);
  EXPECT_TRUE(same.same_bits) << config << ": 2 pipelined micro-batches of 32 against 2 lock-step ones: largest "
                              << "difference " << same.max_abs;
  const ParamDistance whole_batch = param_distance(pipelined.checkpoint, whole.checkpoint);
  ::testing::Test::RecordProperty("whole_batch_max_abs", std::to_string(whole_batch.max_abs));
  std::cout << config << ": 2 micro-batches of 32 against the whole batch of 64 after 20 steps: "
            << (whole_batch.same_bits ? "the same bits" : "largest parameter difference ")
            << (whole_batch.same_bits ? std::string() : std::to_string(whole_batch.max_abs)) << "\n";
}

TEST(GpuMicroBatches, SplitPipelinedGivesTheLockStepBits) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  micro_batches_compared("fashion_mnist_cnn_gpu_split.yaml", {});
}

TEST(GpuMicroBatches, AllGpuPipelinedGivesTheLockStepBits) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  micro_batches_compared("fashion_mnist_cnn_gpu.yaml", {});
}

TEST(GpuGradientChunk, AnOddChunkTrainsLikeTheCpu) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  const std::vector<std::string> common = {"--set", "train.batch_size=50",   "--set", "train.max_steps=10",
                                           "--set", "data.train_limit=1024", "--set", "train.gradient_chunk=7"};
  const TrainRun cpu = run_coordinator("train", shipped("fashion_mnist_cnn.yaml"), dir.path(), "cpu", common);
  const TrainRun gpu = run_coordinator("train", shipped("fashion_mnist_cnn_gpu.yaml"), dir.path(), "gpu", common);
  expect_close_losses(gpu, cpu, 10, 2e-3, "gradient_chunk 7, all on gpu:0 against cpu:0");
}

// The reference CNN's per-sample sizes are multiples of 4 floats, so its
// chunks of 7 start at 16-byte boundaries. Here conv1's output is [3, 25,
// 25] (1875 floats a sample): chunks of 7 start 4 bytes past one, which
// cuDNN's convolutions get as their x, y, dx and dy.
TEST(GpuGradientChunk, ChunksAlignedToFourBytesTrainLikeTheCpu) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  const std::string config = dir.path() + "/odd_sizes.yaml";
  std::ofstream(config) << "job: train\n"
                           "model:\n"
                           "  ops:\n"
                           "    - {name: image, op: input, shape: [1, 28, 28]}\n"
                           "    - {name: label, op: labels, classes: 10}\n"
                           "    - {name: conv1, op: conv2d, inputs: [image], filters: 3, kernel: 4}\n"
                           "    - {name: relu1, op: relu, inputs: [conv1]}\n"
                           "    - {name: conv2, op: conv2d, inputs: [relu1], filters: 5, kernel: 3}\n"
                           "    - {name: flat, op: flatten, inputs: [conv2]}\n"
                           "    - {name: logits, op: dense, inputs: [flat], units: 10}\n"
                           "    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}\n"
                           "train: {batch_size: 50, max_steps: 10, epochs: 1, gradient_chunk: 7,\n"
                           "        optimizer: {type: sgd, learning_rate: 0.05}}\n"
                           "devices:\n"
                           "  cpu:0: {threads: 1}\n"
                           "device_map:\n"
                           "  default: cpu:0\n";
  const std::vector<std::string> common = {"--set", "data.train_limit=500"};
  const TrainRun cpu = run_coordinator("train", config, dir.path(), "cpu", common);
  std::vector<std::string> on_gpu = common;
  for (const std::string& a : all_on_gpu()) on_gpu.push_back(a);
  const TrainRun gpu = run_coordinator("train", config, dir.path(), "gpu", on_gpu);
  expect_close_losses(gpu, cpu, 10, 2e-3, "chunks of 7 samples of 1875 floats, all on gpu:0 against cpu:0");
}

// The ops the reference models lack, in one small model.
std::string other_ops_config(const std::string& dir, const std::string& optimizer) {
  const std::string path = dir + "/other_ops_" + optimizer + ".yaml";
  std::ofstream(path) << "job: train\n"
                         "model:\n"
                         "  ops:\n"
                         "    - {name: image, op: input, shape: [1, 28, 28]}\n"
                         "    - {name: label, op: labels, classes: 10}\n"
                         "    - {name: c1, op: conv2d, inputs: [image], filters: 8, kernel: 3, padding: 1}\n"
                         "    - {name: bn, op: batch_norm, inputs: [c1]}\n"
                         "    - {name: a1, op: gelu, inputs: [bn]}\n"
                         "    - {name: p1, op: avg_pool2d, inputs: [a1], kernel: 2}\n"
                         "    - {name: a2, op: leaky_relu, inputs: [p1]}\n"
                         "    - {name: flat, op: flatten, inputs: [a2]}\n"
                         "    - {name: ln, op: layer_norm, inputs: [flat]}\n"
                         "    - {name: d1, op: dense, inputs: [ln], units: 32}\n"
                         "    - {name: a3, op: sigmoid, inputs: [d1]}\n"
                         "    - {name: d2, op: dense, inputs: [a3], units: 16}\n"
                         "    - {name: a4, op: tanh, inputs: [d2]}\n"
                         "    - {name: d3, op: dense, inputs: [a4], units: 1}\n"
                         "    - {name: loss, op: mse_loss, inputs: [d3, label]}\n"
                         "train:\n"
                         "  batch_size: 40\n"
                         "  max_steps: 10\n"
                         "  epochs: 1\n"
                         "  optimizer: {type: " +
                             optimizer +
                             ", learning_rate: 0.01}\n"
                             "devices:\n"
                             "  cpu:0: {threads: 1}\n"
                             "device_map:\n"
                             "  default: cpu:0\n";
  return path;
}

TEST(GpuOps, NormsPoolingActivationsMseAdamAndSgdTrainLikeTheCpu) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  for (const std::string optimizer : {"adam", "sgd"}) {
    const std::string config = other_ops_config(dir.path(), optimizer);
    const std::vector<std::string> common = {"--set", "data.train_limit=400"};
    const TrainRun cpu = run_coordinator("train", config, dir.path(), optimizer + "-cpu", common);
    std::vector<std::string> on_gpu = common;
    for (const std::string& a : all_on_gpu()) on_gpu.push_back(a);
    const TrainRun gpu = run_coordinator("train", config, dir.path(), optimizer + "-gpu", on_gpu);
    expect_close_losses(gpu, cpu, 10, 1e-3, optimizer + ", all on gpu:0 against cpu:0");
  }
}

}  // namespace
}  // namespace devmap::test
