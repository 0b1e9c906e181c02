// Several parts of one op on each device (configs/fashion_mnist_cnn_16mib.yaml):
// fc1 runs as 16 parts, 8 on cpu:0 and 8 on cpu:1, both devices offloaded
// and limited to 16 MiB, so each device stages two parts at a time. The
// run fits: each worker's allocator peaks at exactly its plan, under the
// limit; the same config gives the same bits run to run; and its weights
// file holds the unsplit model's tensors, so it predicts the same labels
// in the unsplit reference config as in the 16-part one.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/graph/safetensors.h"
#include "tests/support/metrics.h"
#include "tests/support/run_process.h"
#include "tests/support/train_run.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
const std::string kParts = kConfigs + "fashion_mnist_cnn_16mib.yaml";
const std::string kWhole = kConfigs + "fashion_mnist_cnn.yaml";
const std::string kTestImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
constexpr int kSteps = 20;
constexpr uint64_t kLimit = uint64_t{16} << 20;

// kSteps steps of 64 in one epoch, evaluated on 64 test images.
const std::vector<std::string> kShort = {"--set", "data.train_limit=" + std::to_string(64 * kSteps),
                                         "--set", "data.test_limit=64",
                                         "--set", "train.epochs=1"};

// Name -> shape and dtype of every tensor of a safetensors file.
std::map<std::string, std::string> tensors_of(const std::string& path) {
  std::map<std::string, std::string> out;
  for (const SafetensorsEntry& e : read_safetensors_layout(path).entries)
    out[e.name] = e.shape.to_string() + " " + file_dtype_name(e.dtype);
  return out;
}

ProcessResult predict(const std::string& dir, const std::string& config, const std::string& weights,
                      const std::string& out) {
  return run_process({DEVMAP_COORDINATOR_BIN, "predict", config, "--weights", weights, "--input", kTestImages,
                      "--output", out, "--metrics", dir + "/p.jsonl"},
                     dir, {"TMPDIR=" + dir});
}

TEST(SplitParts16MiB, TrainsUnderBothLimitsWithTheSameBitsAndLoadsIntoTheUnsplitModel) {
  if (!std::filesystem::exists(kTestImages)) GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  TempDir dir;
  const TrainRun a = train_run(dir.path(), "a", kParts, kShort);
  const TrainRun b = train_run(dir.path(), "b", kParts, kShort);
  for (const TrainRun* r : {&a, &b}) ASSERT_EQ(r->process.exit_code, 0) << r->process.err;
  ASSERT_EQ(a.losses.size(), static_cast<size_t>(kSteps)) << a.process.err;
  EXPECT_EQ(a.losses, b.losses);
  ASSERT_FALSE(a.weights.empty());
  EXPECT_TRUE(a.weights == b.weights) << "the weights files differ";

  // Both devices, each at exactly its plan, under 16 MiB.
  const std::vector<std::string> devices = lines_with(a.metrics, "device");
  ASSERT_EQ(devices.size(), 2u) << a.metrics;
  for (const std::string& d : devices) {
    EXPECT_EQ(json_field(d, "peak_bytes"), json_field(d, "planned_bytes")) << d;
    EXPECT_LE(std::stoull(json_field(d, "peak_bytes")), kLimit) << d;
    EXPECT_EQ(std::stoull(json_field(d, "limit_bytes")), kLimit) << d;
  }

  // One tensor per parameter, as the unsplit model has them; the labels it
  // predicts over the 10000 test images are the same in either model.
  const std::string weights = dir.path() + "/a/w.safetensors";
  EXPECT_EQ(tensors_of(weights).at("fc1.weight"), "[1024,3136] F32");
  const TrainRun whole =
      train_run(dir.path(), "whole", kWhole,
                {"--set", "train.max_steps=1", "--set", "data.train_limit=64", "--set", "data.test_limit=64"});
  ASSERT_EQ(whole.process.exit_code, 0) << whole.process.err;
  EXPECT_EQ(tensors_of(weights), tensors_of(dir.path() + "/whole/w.safetensors"));
  const ProcessResult in_whole = predict(dir.path(), kWhole, weights, dir.path() + "/whole.csv");
  const ProcessResult in_parts = predict(dir.path(), kParts, weights, dir.path() + "/parts.csv");
  ASSERT_EQ(in_whole.exit_code, 0) << in_whole.err;
  ASSERT_EQ(in_parts.exit_code, 0) << in_parts.err;
  const std::string labels = read_file(dir.path() + "/whole.csv");
  EXPECT_GT(labels.size(), 10000u);
  EXPECT_TRUE(read_file(dir.path() + "/parts.csv") == labels) << "the predicted labels differ";
}

// plan lists every part under `split ops`, with the input counted once for
// the device's first part; each device stages two parts, not its half.
TEST(SplitParts16MiB, PlanShowsEveryPartAndTheInputOncePerDevice) {
  TempDir dir;
  const ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "plan", kParts}, dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // flat is made on cpu:1 (98.0 KiB a micro-batch of 8): cpu:0's first part
  // receives it, its later parts share it.
  EXPECT_NE(r.out.find("    fc1/part0 on cpu:0: units 0..63 (64), parameters 784.2 KiB, input in 98.0 KiB, output "
                       "out -\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    fc1/part7 on cpu:0: units 448..511 (64), parameters 784.2 KiB, input in -, output out -\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    fc1/part15 on cpu:1: units 960..1023 (64), parameters 784.2 KiB, input in -, output "
                       "out 2.0 KiB\n"),
            std::string::npos)
      << r.out;
  // Two parts' parameters and gradients: 2 x 2 x 784.2 KiB.
  EXPECT_NE(r.out.find("  offload staging pool on the device (the two largest ops' shares): 3.06 MiB\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace devmap::testing
