// Memory budgets end to end: `coordinator plan`, impossible budgets, a
// training step split into micro-batches, and a 28000-image prediction on
// a conv device limited to 16 MiB.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "core/graph/safetensors.h"
#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
const std::string kTrainImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

ProcessResult coordinator(std::vector<std::string> args, const TempDir& dir) {
  args.insert(args.begin(), DEVMAP_COORDINATOR_BIN);
  return run_process(args, dir.path(), {"TMPDIR=" + dir.path()});
}

std::map<std::string, std::vector<float>> read_weights(const std::string& path) {
  SafetensorsLayout layout = read_safetensors_layout(path);
  std::string bytes = read_file(path);
  std::map<std::string, std::vector<float>> out;
  for (const SafetensorsEntry& e : layout.entries) {
    std::vector<float>& v = out[e.name];
    v.resize((e.end - e.begin) / sizeof(float));
    std::memcpy(v.data(), bytes.data() + layout.data_start + e.begin, e.end - e.begin);
  }
  return out;
}

TEST(PlanCommand, PrintsDevicesOpsAndCutEdgesAndRunsNothing) {
  TempDir dir;
  ProcessResult r = coordinator({"plan", kConfigs + "fashion_mnist_cnn_split.yaml"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want :
       {"memory plan of ", "(train): batch 64", "cpu:0: ", "cpu:1: ", "conv1 (conv2d)", "fc1 (dense)",
        "transport slots it writes", "cut edges (per batch of 64)", "pool2 [64,64,7,7]: cpu:0 -> cpu:1",
        "evaluation in batches of 64; workers allocate for 64 samples"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  for (const std::string& e : tree_entries(dir.path()))  // plan starts no run: no run directory or socket
    EXPECT_TRUE(e.ends_with("stdout.txt") || e.ends_with("stderr.txt")) << e;

  ProcessResult j = coordinator({"plan", kConfigs + "fashion_mnist_cnn_split.yaml", "--json", "--batch", "32"}, dir);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(json_field(j.out, "batch"), "32");
  EXPECT_EQ(json_field(j.out, "micro_batches"), "1");
  EXPECT_NE(j.out.find("\"cut_edges\":[{\"tensor\":\"pool2\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"op\":\"fc1\",\"type\":\"dense\",\"params_bytes\":12849152"), std::string::npos) << j.out;
}

TEST(PlanCommand, ImpossibleBudgetFailsBeforeAnythingRuns) {
  TempDir dir;
  const std::string config = kConfigs + "fashion_mnist_cnn_split.yaml";
  for (const char* job : {"plan", "train"}) {
    ProcessResult r = coordinator({job, config, "--set", "devices.cpu:1.memory_limit=16MiB"}, dir);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    std::string line = r.first_err_line();
    EXPECT_EQ(line.rfind(config + ": cpu:1 needs ", 0), 0u) << line;
    EXPECT_NE(line.find("most of it for fc1 (parameters 12.25 MiB"), std::string::npos) << line;
    EXPECT_NE(line.find("but its memory_limit is 16.00 MiB: move fc1 to another device or raise cpu:1's memory_limit"),
              std::string::npos)
        << line;
  }
}

// One step of 64 under a budget that fits 16 samples runs as 4 accumulated
// micro-batches, and with gradient chunks of 16 its update has the bits of
// the unbudgeted step's, on every CPU (scripts/emulated_cpus.sh runs this
// test under other CPUs' dispatch). The first step of momentum SGD is
// The ResNet at batch 128 on one device: its tensor buffers share one arena
// by lifetime, which holds at most half of the 420.90 MiB the buffers took
// each on their own, no less than the most bytes alive at once, and the
// `plan` table says so.
TEST(PlanCommand, TheResnetsBuffersShareMemoryByLifetime) {
  TempDir dir;
  ProcessResult j = coordinator({"plan", kConfigs + "fashion_mnist_resnet.yaml", "--json"}, dir);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const double total = std::stod(json_field(j.out, "total_bytes"));
  const double arena = std::stod(json_field(j.out, "arena_bytes"));
  const double unshared = std::stod(json_field(j.out, "arena_unshared_bytes"));
  const double lower = std::stod(json_field(j.out, "arena_lower_bound_bytes"));
  EXPECT_LE(total, 210.5 * 1024 * 1024) << j.out.substr(0, 600);
  EXPECT_GE(arena, lower);
  EXPECT_LT(arena, unshared / 2);
  ProcessResult t = coordinator({"plan", kConfigs + "fashion_mnist_resnet.yaml"}, dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("tensor arena (buffers share memory by lifetime): "), std::string::npos) << t.out;
}

// The shipped configs whose devices run only worker_cpu (`plan
// --worker-programs` says which programs a config's devices run), by name.
std::vector<std::string> shipped_cpu_configs() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(kConfigs)) {
    if (e.path().extension() != ".yaml") continue;
    TempDir dir;
    const ProcessResult programs =
        run_process({DEVMAP_COORDINATOR_BIN, "plan", e.path().string(), "--worker-programs"}, dir.path());
    EXPECT_EQ(programs.exit_code, 0) << e.path() << "\n" << programs.err;
    if (programs.out == "worker_cpu\n") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Every shipped config that runs on CPUs, one training step: each worker's
// allocator peaks at exactly the bytes its device's plan holds.
TEST(ArenaPeak, EveryShippedCpuConfigAllocatesItsPlan) {
  if (!std::filesystem::exists(kTrainImages)) GTEST_SKIP() << kTrainImages << " is absent: run scripts/setup.sh";
  const std::vector<std::string> names = shipped_cpu_configs();
  EXPECT_GE(names.size(), 11u) << "the CPU configs of configs/";
  for (const std::string& name : names) {
    TempDir dir;
    const std::string metrics = dir.path() + "/m.jsonl";
    std::vector<std::string> args{"train",     kConfigs + name + ".yaml",
                                  "--set",     "train.max_steps=1",
                                  "--set",     "data.train_limit=512",
                                  "--set",     "data.test_limit=64",
                                  "--set",     "train.checkpoint=" + dir.path() + "/w.safetensors",
                                  "--metrics", metrics};
    if (name.starts_with("fashion_mnist_resnet"))  // its warm-up would outlast the one step
      args.insert(args.end(), {"--set", "train.optimizer.schedule.warmup_steps=0"});
    args.insert(args.begin(), DEVMAP_COORDINATOR_BIN);
    // The auto config calibrates: into the test's own cache.
    ProcessResult r =
        run_process(args, dir.path(), {"TMPDIR=" + dir.path(), "XDG_CACHE_HOME=" + dir.path() + "/cache"});
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.err;
    const auto devices = lines_with(read_file(metrics), "device");
    ASSERT_FALSE(devices.empty()) << name;
    for (const std::string& d : devices)
      EXPECT_EQ(json_field(d, "peak_bytes"), json_field(d, "planned_bytes")) << name << ": " << d;
  }
}

// p -= lr * g, so the update is the difference of the steps at learning
// rates 0.01 and 0.02: it must not be zero. scripts/emulated_cpus.sh runs
// this test with its workers under qemu, where one step takes longer than
// the default step_timeout's 30 s on some hosts (a Xeon's TCG): the
// instructions finishing within it keep the step alive (faults.step_timeout
// counts from the last one), so the default holds.
TEST(MicroBatchTraining, FourMicroBatchesGiveTheFullBatchUpdate) {
  TempDir dir;
  const std::string config = kConfigs + "fashion_mnist_cnn.yaml";
  ProcessResult plan =
      coordinator({"plan", config, "--json", "--batch", "16", "--set", "train.eval_batch_size=16"}, dir);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::string limit = json_field(plan.out, "total_bytes");
  ASSERT_FALSE(limit.empty()) << plan.out;
  auto step = [&](const std::string& tag, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train",     config,
                                     "--set",     "train.max_steps=1",
                                     "--set",     "data.test_limit=64",
                                     "--set",     "train.shuffle=false",
                                     "--set",     "train.eval_batch_size=16",
                                     "--set",     "train.gradient_chunk=16",
                                     "--set",     "train.checkpoint=" + dir.path() + "/" + tag + ".safetensors",
                                     "--metrics", dir.path() + "/" + tag + ".jsonl"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = coordinator(args, dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  step("double", {"--set", "train.optimizer.learning_rate=0.02"});
  step("full", {});
  ProcessResult micro = step("micro", {"--set", "devices.cpu:0.memory_limit=" + limit});
  EXPECT_NE(micro.err.find("running 4 micro-batches of 16"), std::string::npos) << micro.err;
  auto w0 = read_weights(dir.path() + "/double.safetensors");
  auto full = read_weights(dir.path() + "/full.safetensors");
  auto split = read_weights(dir.path() + "/micro.safetensors");
  ASSERT_EQ(full.size(), 8u);  // weight and bias of conv1, conv2, fc1, logits
  for (const auto& [name, a] : full) {
    const std::vector<float>& b = split.at(name);
    const std::vector<float>& twice = w0.at(name);
    EXPECT_NE(a, twice) << name << " was not updated";
    ASSERT_EQ(a.size(), b.size()) << name;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << name;
  }
  // The allocator stayed within the budget, and the plan was honest.
  auto devices = lines_with(read_file(dir.path() + "/micro.jsonl"), "device");
  ASSERT_EQ(devices.size(), 1u);
  const double peak = std::stod(json_field(devices[0], "peak_bytes"));
  EXPECT_LE(peak, std::stod(json_field(devices[0], "limit_bytes")));
  EXPECT_GE(peak, 0.8 * std::stod(json_field(devices[0], "planned_bytes")));
}

// The first `count` images of an IDX (gzip) file, as a plain IDX file.
void write_idx_prefix(const std::string& from, const std::string& to, uint32_t count) {
  gzFile in = gzopen(from.c_str(), "rb");
  ASSERT_NE(in, nullptr);
  unsigned char header[16];
  ASSERT_EQ(gzread(in, header, 16), 16);
  header[4] = static_cast<unsigned char>(count >> 24);
  header[5] = static_cast<unsigned char>(count >> 16);
  header[6] = static_cast<unsigned char>(count >> 8);
  header[7] = static_cast<unsigned char>(count);
  std::string pixels(static_cast<size_t>(count) * 784, '\0');
  ASSERT_EQ(gzread(in, pixels.data(), static_cast<unsigned>(pixels.size())), static_cast<int>(pixels.size()));
  gzclose(in);
  std::ofstream out(to, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header), 16);
  out.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
}

TEST(PredictBudget, TwentyEightThousandImagesOnA16MiBConvDevice) {
  if (!std::filesystem::exists(kTrainImages)) GTEST_SKIP() << kTrainImages << " is absent: run scripts/setup.sh";
  TempDir dir;
  const std::string config = kConfigs + "fashion_mnist_cnn_split.yaml";  // conv layers on cpu:0, dense on cpu:1
  const std::string weights = dir.path() + "/w.safetensors", images = dir.path() + "/images-28000.idx";
  write_idx_prefix(kTrainImages, images, 28000);
  ProcessResult t = coordinator({"train", config, "--set", "train.max_steps=10", "--set", "data.test_limit=100",
                                 "--set", "train.checkpoint=" + weights, "--metrics", dir.path() + "/t.jsonl"},
                                dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  auto predict = [&](const std::string& tag, const std::string& batch, std::vector<std::string> extra) {
    std::vector<std::string> args = {"predict", config, "--weights", weights,
                                     "--input", images, "--output",  dir.path() + "/" + tag + ".csv",
                                     "--batch", batch,  "--metrics", dir.path() + "/" + tag + ".jsonl"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = coordinator(args, dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  // Unlimited, in batches of 1000; then all 28000 asked for at once.
  predict("unlimited", "1000", {});
  ProcessResult limited = predict("limited", "28000", {"--set", "devices.cpu:0.memory_limit=16MiB"});
  EXPECT_NE(limited.err.find("cpu:0: batch 28000 needs "), std::string::npos) << limited.err;
  EXPECT_NE(limited.err.find("> 16.00 MiB limit; running "), std::string::npos) << limited.err;
  const std::string rows = read_file(dir.path() + "/limited.csv");
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 28001);
  EXPECT_EQ(rows, read_file(dir.path() + "/unlimited.csv"));
  auto devices = lines_with(read_file(dir.path() + "/limited.jsonl"), "device");
  ASSERT_EQ(devices.size(), 2u);
  for (const std::string& d : devices) {
    std::cout << "[ figures  ] " << d << "\n";
    const double peak = std::stod(json_field(d, "peak_bytes")), planned = std::stod(json_field(d, "planned_bytes"));
    const double limit = std::stod(json_field(d, "limit_bytes"));
    if (json_field(d, "device") == "cpu:0") {
      EXPECT_EQ(limit, 16.0 * 1024 * 1024);
    }
    if (limit > 0) {
      EXPECT_LE(peak, limit) << d;
    }
    EXPECT_GE(peak, 0.8 * planned) << d;
    EXPECT_LE(peak, planned) << d;
    EXPECT_GT(std::stod(json_field(d, "vm_hwm_bytes")), 0) << d;
  }
}

}  // namespace
}  // namespace devmap::testing
