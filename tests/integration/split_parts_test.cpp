// Several parts of one op on a device (configs/fashion_mnist_cnn_16mib.yaml):
// fc1 runs as 16 parts on cpu:0, conv2 on cpu:1, both devices offloaded
// and limited to 16 MiB, so cpu:0 stages two parts at a time. The
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

// plan lists every part under `split ops`: the config's 16 parts on cpu:0,
// each device staging two parts, not the whole op.
TEST(SplitParts16MiB, PlanListsEveryPartAndStagesTwoOfThem) {
  TempDir dir;
  const ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "plan", kParts}, dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int k = 0; k < 16; ++k) {
    const std::string units = std::to_string(64 * k) + ".." + std::to_string(64 * k + 63);
    EXPECT_NE(r.out.find("    fc1/part" + std::to_string(k) + " on cpu:0: units " + units +
                         " (64), parameters 784.2 KiB, input in -, output out -\n"),
              std::string::npos)
        << k << "\n"
        << r.out;
  }
  // Two parts' parameters and gradients: 2 x 2 x 784.2 KiB (not fc1's 24.5 MiB).
  EXPECT_NE(r.out.find("  offload staging pool on the device (the two largest ops' shares): 3.06 MiB\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("micro-batches of 1;"), std::string::npos) << r.out;
}

// Parts on both devices, two on each: the input crosses once to cpu:1, so
// only its first part there counts it; every part there sends its output.
// Its gradient crosses back once too: cpu:1's parts read the input through
// one fan-out (core/graph/split_op.h) that sums their gradients there.
TEST(SplitParts16MiB, PlanCountsTheInputOncePerDevice) {
  TempDir dir;
  const ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "plan", kParts, "--set",
                                       "model.ops.fc1.split={cpu:0: [0.25, 0.25], cpu:1: [0.25, 0.25]}"},
                                      dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"    fc1/part1 on cpu:0: units 256..511 (256), parameters 3.06 MiB, input in -, output out -\n",
        "    fc1/part2 on cpu:1: units 512..767 (256), parameters 3.06 MiB, input in 24.5 KiB, output out 2.0 KiB\n",
        "    fc1/part3 on cpu:1: units 768..1023 (256), parameters 3.06 MiB, input in -, output out 2.0 KiB\n",
        "  flat [2,3136]: cpu:0 -> cpu:1, 25088 bytes (24.5 KiB), slot ring 49.0 KiB\n",
        "  flat@grad.fc1/fanout0 (gradient) [2,3136]: cpu:1 -> cpu:0, 25088 bytes (24.5 KiB), slot ring 49.0 KiB\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
  EXPECT_EQ(r.out.find("flat@grad.fc1/part"), std::string::npos) << "no part sends its own input gradient\n" << r.out;
}

}  // namespace
}  // namespace devmap::testing
