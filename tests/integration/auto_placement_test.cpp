// device_map `auto`: the planner places the ops the user left to it from
// times measured on this machine (train calibrates what the cache lacks),
// pins stay where the user put them, --emit-map writes a map that trains
// with the auto run's bits, and budgets no placement meets exit 2 with what
// would make one fit.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kSplit = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_split.yaml";

// Every op of the split config left to the planner.
const std::vector<std::string> kAllAuto = {
    "--set", "device_map.default=auto",    "--set", "device_map.place.fc*=auto",
    "--set", "device_map.place.flat=auto", "--set", "model.ops.features.device=auto"};
const std::vector<std::string> kSmall = {"--set", "data.train_limit=640", "--set", "data.test_limit=64",
                                         "--set", "train.batch_size=32",  "--set", "train.max_steps=8"};

class AutoPlacement : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST is absent: run scripts/setup.sh";
  }
  ProcessResult coordinator(std::vector<std::string> args, std::vector<std::string> more = {}) {
    args.insert(args.begin(), DEVMAP_COORDINATOR_BIN);
    args.insert(args.end(), {"--calibration", dir_.path() + "/calibration.tsv"});
    args.insert(args.end(), more.begin(), more.end());
    return run_process(args, dir_.path(), {"TMPDIR=" + dir_.path()});
  }
  std::vector<std::string> losses(const std::string& metrics) const { return step_losses_in(read_file(metrics)); }
  static std::vector<std::string> join(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  TempDir dir_;
};

TEST_F(AutoPlacement, TrainsWithTheBitsOfTheMapItEmits) {
  const std::string run = dir_.path() + "/auto.jsonl";
  const ProcessResult t = coordinator(join(
      join({"train", kSplit, "--metrics", run, "--log-every", "1", "--checkpoint", dir_.path() + "/auto.safetensors"},
           kAllAuto),
      kSmall));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("calibrate: cpu:0 (1 thread), batch 32"), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("auto placement (the optimum over contiguous placements"), std::string::npos) << t.err;
  std::string done;
  for (const std::string& l : lines_with(read_file(run), "done")) done = l;
  EXPECT_EQ(json_field(done, "predicted_from"), "calibration") << done;

  const std::string map = dir_.path() + "/map.yaml";
  const ProcessResult p = coordinator(join(join({"plan", kSplit, "--emit-map", map}, kAllAuto), kSmall));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string text = read_file(map);
  EXPECT_EQ(text.find("auto"), std::string::npos) << "the emitted map still leaves ops to the planner:\n" << text;

  const std::string again = dir_.path() + "/map.jsonl";
  const ProcessResult m = coordinator(
      {"train", map, "--metrics", again, "--log-every", "1", "--checkpoint", dir_.path() + "/map.safetensors"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const std::vector<std::string> a = losses(run), b = losses(again);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
}

TEST_F(AutoPlacement, PinnedOpsStayWhereTheUserPutThem) {
  // The conv layers pinned to cpu:1 (their group); the rest is the planner's.
  const ProcessResult p =
      coordinator({"plan", kSplit, "--json", "--set", "device_map.default=auto", "--set", "device_map.place.fc*=auto",
                   "--set", "device_map.place.flat=auto", "--set", "model.ops.features.device=cpu:1"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const size_t at = p.out.find("\"auto_placement\":{\"placement\":[");
  ASSERT_NE(at, std::string::npos) << p.out;
  // image, label, then conv1 relu1 pool1 conv2 relu2 pool2: all on cpu:1.
  const std::string pinned = "\"\",\"\",\"cpu:1\",\"cpu:1\",\"cpu:1\",\"cpu:1\",\"cpu:1\",\"cpu:1\",";
  EXPECT_EQ(p.out.substr(at + 31, pinned.size()), pinned) << p.out.substr(at, 200);
}

// At 16 MiB each with offload refused, nothing fits: exit 2 with the
// config's own account, what each lever lacked, and the smallest change
// (offload with the split would fit).
TEST_F(AutoPlacement, BudgetsNoPlacementMeetsExitTwoWithWhatWouldFit) {
  const ProcessResult p =
      coordinator(join({"plan", kSplit, "--set", "devices.cpu:0={memory_limit: 16MiB, offload: none}", "--set",
                        "devices.cpu:1={memory_limit: 16MiB, offload: none}"},
                       kAllAuto));
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.err.find("no placement fits the devices' memory_limit"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("fc1 alone needs"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("to fit: raise cpu:0's memory_limit to"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("; with auto's levers: fc1 split as `split: {cpu:0: 0.5, cpu:1: 0.5}`: does not fit (cpu:0 "
                       "needs "),
            std::string::npos)
      << p.err;
  EXPECT_NE(p.err.find("but the config gives cpu:0 and cpu:1 `offload: none`; the smallest change that fits: drop "
                       "`offload: none` from cpu:0 and cpu:1"),
            std::string::npos)
      << p.err;
  // 32 MiB and 48 MiB: fc1 (37 MiB with its gradient and momentum) fits
  // only cpu:1, and the plan keeps to both limits.
  const ProcessResult q = coordinator(
      join({"plan", kSplit, "--set", "devices.cpu:0.memory_limit=32MiB", "--set", "devices.cpu:1.memory_limit=48MiB"},
           kAllAuto));
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("of 32.00 MiB\n"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("of 48.00 MiB\n"), std::string::npos) << q.out;
}

// fc1 (36.77 MiB with its gradient and momentum) fits neither 28 MiB
// device: auto runs it split (equal speeds: half each), says so and keeps
// to both limits; offload alone would fit too but is predicted slower, and
// conv1 runs as GEMM (its workspace leaves room for larger micro-batches).
TEST_F(AutoPlacement, AnOpThatFitsNoDeviceRunsSplitAcrossThem) {
  const std::string map = dir_.path() + "/map.yaml";
  const ProcessResult p =
      coordinator(join({"plan", kSplit, "--emit-map", map, "--set", "devices.cpu:0.memory_limit=28MiB", "--set",
                        "devices.cpu:1.memory_limit=28MiB"},
                       kAllAuto));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string text = read_file(map);
  EXPECT_NE(
      text.find("{name: conv1, op: conv2d, inputs: [image], filters: 32, kernel: 5, padding: 2, algorithm: gemm}"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("split: {cpu:0: 0.5, cpu:1: 0.5}"), std::string::npos) << text;
  EXPECT_NE(p.err.find("devmap: auto: conv1 as im2col + GEMM (`algorithm: gemm`): 637.5 KiB of workspace at 8 "
                       "samples against oneDNN's 7.43 MiB, the same FLOPs\n"
                       "devmap: auto: split fc1 as `split: {cpu:0: 0.5, cpu:1: 0.5}` (shares by the devices' speed "
                       "and the bytes each part moves, within what each memory_limit holds of it): fc1 alone needs "
                       "36.77 MiB, more than any device's memory_limit\n"),
            std::string::npos)
      << p.err;
  const size_t not_taken = p.out.find("  levers not taken:\n");
  ASSERT_NE(not_taken, std::string::npos) << p.out;
  EXPECT_NE(p.out.find("\n    offload parameters on cpu:0 and cpu:1: ", not_taken), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("\n    fc1 split as `split: {cpu:0: 0.5, cpu:1: 0.5}`: ", not_taken), std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("    fc1/part0 on cpu:0: units 0..511 (512), parameters 6.13 MiB"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("    fc1/part1 on cpu:1: units 512..1023 (512), parameters 6.13 MiB"), std::string::npos)
      << p.out;
  size_t within = 0;  // each device in the placement and in the memory plan
  for (size_t at = p.out.find("of 28.00 MiB\n"); at != std::string::npos; at = p.out.find("of 28.00 MiB\n", at + 1))
    ++within;
  EXPECT_EQ(within, 4u) << p.out;
  EXPECT_EQ(p.out.find("DOES NOT FIT"), std::string::npos) << p.out;
}

// At 16 MiB each neither the split nor offload fits alone: auto offloads
// both devices' parameters and splits fc1 into parts, all on one device
// (predicted faster than parts on both, where the other device's 16 MiB go
// to the convs; which device, and whether conv1 also runs as im2col + GEMM
// for its smaller workspace, are near ties that the CPU's measured peak
// decides), staged a part at a time; it says which levers it used and why,
// and keeps to both limits; the map it emits pins both levers.
TEST_F(AutoPlacement, AtSixteenMiBAutoOffloadsAndSplitsWithinBothLimits) {
  const std::string map = dir_.path() + "/map.yaml";
  const ProcessResult p =
      coordinator(join({"plan", kSplit, "--emit-map", map, "--set", "devices.cpu:0.memory_limit=16MiB", "--set",
                        "devices.cpu:1.memory_limit=16MiB"},
                       kAllAuto));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::regex levers(
      "  levers, since nothing fits without them:\n"
      "(    conv1 as im2col \\+ GEMM \\(`algorithm: gemm`\\): [^\n]*\n)?"
      "    offload parameters on cpu:0 and cpu:1: no placement fits with every parameter on its device\n"
      "    split fc1 into 13 parts \\(13 of 0.0769231 on (cpu:[01])\\) \\(all on \\2, whose offload stages "
      "a part at a time\\): fc1 alone needs 36.77 MiB, more than any device's memory_limit\n"
      "  levers not taken:\n"
      "    fc1 split as `split: \\{cpu:0: 0.5, cpu:1: 0.5\\}`: does not fit \\(cpu:0 needs ");
  std::smatch found;
  ASSERT_TRUE(std::regex_search(p.out, found, levers)) << p.out;
  const std::string parts_on = found[2].str();
  size_t within = 0;
  for (size_t at = p.out.find("of 16.00 MiB\n"); at != std::string::npos; at = p.out.find("of 16.00 MiB\n", at + 1))
    ++within;
  EXPECT_EQ(within, 4u) << p.out;
  EXPECT_EQ(p.out.find("DOES NOT FIT"), std::string::npos) << p.out;
  const std::string text = read_file(map);
  EXPECT_NE(text.find("split: {" + parts_on + ": [0.0769231, "), std::string::npos) << text;
  EXPECT_NE(text.find("cpu:0: {threads: 1, memory_limit: 16MiB, offload: parameters}"), std::string::npos) << text;
  const ProcessResult again = coordinator({"plan", map});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("DOES NOT FIT"), std::string::npos) << again.out;
}

// The 16 MiB case trains as auto planned it: each worker's allocator peaks
// at its plan, under the limit, and the map --emit-map writes (the split
// and offload as keys) trains with the same bits.
TEST_F(AutoPlacement, TrainsWithOffloadAndSplitUnderSixteenMiBAsTheMapItEmits) {
  const std::vector<std::string> limits = {"--set", "devices.cpu:0.memory_limit=16MiB", "--set",
                                           "devices.cpu:1.memory_limit=16MiB"};
  const std::string run = dir_.path() + "/auto.jsonl";
  const ProcessResult t =
      coordinator(join(join(join({"train", kSplit, "--metrics", run, "--log-every", "1"}, kAllAuto), kSmall), limits));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("devmap: auto: offload parameters on cpu:0 and cpu:1: "), std::string::npos) << t.err;
  const std::string metrics = read_file(run);
  const std::vector<std::string> devices = lines_with(metrics, "device");
  ASSERT_EQ(devices.size(), 2u) << metrics;
  for (const std::string& d : devices) {
    EXPECT_EQ(json_field(d, "peak_bytes"), json_field(d, "planned_bytes")) << d;
    EXPECT_LE(std::stoull(json_field(d, "peak_bytes")), uint64_t{16} << 20) << d;
  }

  const std::string map = dir_.path() + "/map.yaml";
  const ProcessResult p = coordinator(join(join(join({"plan", kSplit, "--emit-map", map}, kAllAuto), kSmall), limits));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string again = dir_.path() + "/map.jsonl";
  const ProcessResult m = coordinator({"train", map, "--metrics", again, "--log-every", "1"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const std::vector<std::string> a = losses(run), b = losses(again);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
}

// When everything fits, auto splits the op with the most FLOPs only over
// devices of unequal speed, and only for a predicted gain of 10%: with
// cpu:1 twice as fast (two threads against one), fc1 runs as two parts
// by the devices' speed; on equal devices it tries no split.
TEST_F(AutoPlacement, ASplitForSpeedOnlyOnUnequalDevices) {
  const std::string config = std::string(DEVMAP_SOURCE_DIR) + "/tests/configs/wide_dense_auto.yaml";
  const std::string map = dir_.path() + "/map.yaml";
  const ProcessResult p = coordinator({"plan", config, "--emit-map", map, "--set", "devices.cpu:1.threads=2"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("  levers, since they are predicted faster:\n    split fc1 as `split: {cpu:0: 0."),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("(shares by the devices' speed and the bytes each part moves): "), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("devmap: auto: split fc1 as `split: {cpu:0: 0."), std::string::npos) << p.err;
  EXPECT_NE(read_file(map).find("split: {cpu:0: 0."), std::string::npos) << read_file(map);
  const ProcessResult equal = coordinator({"plan", config});
  ASSERT_EQ(equal.exit_code, 0) << equal.err;
  EXPECT_EQ(equal.out.find("split fc1"), std::string::npos) << equal.out;
  EXPECT_EQ(equal.out.find("levers"), std::string::npos) << equal.out;
}

TEST_F(AutoPlacement, AGpuThatCannotRunHereGetsNoOp) {
  const ProcessResult p =
      coordinator({"plan", std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn_gpu_split.yaml", "--set",
                   "device_map.default=auto", "--set", "model.ops.features.device=auto"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  if (p.err.find("devmap: auto placement leaves out gpu:0: no usable GPU") == std::string::npos)
    GTEST_SKIP() << "this machine has a usable GPU: " << p.out.substr(0, p.out.find('\n'));
  EXPECT_NE(p.out.find("cpu:0 conv1..acc"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("gpu:0: busy"), std::string::npos) << p.out;
}

}  // namespace
}  // namespace devmap::testing
