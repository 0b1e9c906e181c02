// DEVMAP_CPU_PATH through the real binaries: a bad value stops the run
// before any worker starts (exit 2); --profile names the kernel that ran on
// each forced path and reports each op against the measured FP32 peak,
// cached under XDG_CACHE_HOME.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/exec/cpu_path.h"
#include "core/exec/gemm_library.h"
#include "kernels/cpu/dense.h"
#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfig = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn.yaml";

ProcessResult train(const TempDir& dir, const std::vector<std::string>& env, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {DEVMAP_COORDINATOR_BIN,
                                   "train",
                                   kConfig,
                                   "--metrics",
                                   dir.path() + "/m.jsonl",
                                   "--set",
                                   "train.max_steps=2",
                                   "--set",
                                   "data.test_limit=64",
                                   "--set",
                                   "train.checkpoint=" + dir.path() + "/w.safetensors"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::vector<std::string> all_env = {"TMPDIR=" + dir.path(), "XDG_CACHE_HOME=" + dir.path() + "/cache"};
  all_env.insert(all_env.end(), env.begin(), env.end());
  return run_process(argv, dir.path(), all_env);
}

TEST(GemmCli, UnknownLibraryExitsTwoBeforeAnyWorker) {
  TempDir dir;
  const ProcessResult r = train(dir, {"DEVMAP_GEMM=mkl"}, {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.first_err_line(),
            "DEVMAP_GEMM=mkl is not a GEMM library: use auto (OpenBLAS where its core runs the CPU path, else oneDNN), "
            "openblas or onednn");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/m.jsonl"));
}

// oneDNN's instruction set on a path, as its kernels' names give it.
std::string onednn_isa(CpuPath path) {
  return path == CpuPath::kAvx512 ? "avx512_core" : path == CpuPath::kAvx2 ? "avx2" : "sse41";
}

TEST(CpuPathCli, UnknownPathExitsTwoBeforeAnyWorker) {
  TempDir dir;
  const ProcessResult r = train(dir, {"DEVMAP_CPU_PATH=sse9"}, {});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.first_err_line(),
            "DEVMAP_CPU_PATH=sse9 is not a CPU path: use auto, avx512, avx2 or baseline (this CPU supports baseline" +
                std::string(cpu_supports(CpuPath::kAvx2) ? ", avx2" : "") +
                (cpu_supports(CpuPath::kAvx512) ? ", avx512" : "") + ")");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/m.jsonl"));
}

class CpuPathProfile : public ::testing::TestWithParam<CpuPath> {};

TEST_P(CpuPathProfile, NamesTheKernelAndTheMeasuredPeak) {
  const std::string path = cpu_path_name(GetParam());
  if (!cpu_supports(GetParam())) GTEST_SKIP() << "uncovered: this CPU lacks the " << path << " path";
  TempDir dir;
  // The GEMM libraries the worker runs on this path: "gemm G, dense
  // gradients D; cpu path P". OpenBLAS only where its core runs the path
  // (the core follows OPENBLAS_CORETYPE, which tests leave as they find it),
  // else oneDNN on the path's instruction set; the dense gradients in oneDNN.
  const ProcessResult describe =
      run_process({DEVMAP_WORKER_CPU_BIN, "--describe"}, dir.path(), {"DEVMAP_CPU_PATH=" + path});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  const std::string onednn = "onednn:" + onednn_isa(GetParam());
  const size_t comma = describe.out.find(", dense gradients ");
  ASSERT_NE(comma, std::string::npos) << describe.out;
  const std::string gemm = describe.out.substr(5, comma - 5);
  EXPECT_TRUE(gemm == onednn || gemm.rfind("openblas:", 0) == 0) << describe.out;
  EXPECT_EQ(describe.out.substr(comma), ", dense gradients " + onednn + "; cpu path " + path + "\n");

  const ProcessResult r = train(dir, {"DEVMAP_CPU_PATH=" + path}, {"--profile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool conv2 = false, fc1 = false, optimizer = false;
  for (const std::string& line : lines_with(read_file(dir.path() + "/m.jsonl"), "profile")) {
    const std::string op = json_field(line, "op"), kernel = json_field(line, "kernel");
    EXPECT_GT(std::stod(json_field(line, "peak_gflop_per_s")), 0.0) << line;
    if (op == "conv2") {
      conv2 = true;
      // Its forward writes relu2's output (core/plan/fused_relu.h), and says so.
      const bool forward = json_field(line, "direction") == "forward";
      EXPECT_EQ(kernel, "winograd/" + path + "+" + gemm + (forward ? "+relu" : "")) << line;
      // FLOPs are the definition's (Winograd multiplies less): no upper bound.
      EXPECT_GT(std::stod(json_field(line, "peak_fraction")), 0.0) << line;
    }
    if (op == "fc1") {
      fc1 = true;
      // The own GEMMs run on the AVX-512 path unless DEVMAP_GEMM forces a
      // library: the forward's up to kDenseOwnForwardMaxRows rows a call
      // (kernels/cpu/dense_gemm.h), a library's past them; the gradients'
      // (dense_gradient_gemm.h) for any rows. Elsewhere the libraries.
      const bool own = GetParam() == CpuPath::kAvx512 && !gemm_library_from_environment();
      const std::string forward =
          own ? "dense/avx512, >" + std::to_string(cpu::kDenseOwnForwardMaxRows) + " rows " + gemm : gemm;
      const std::string backward = own ? "dense/avx512" : onednn;
      EXPECT_EQ(kernel, json_field(line, "direction") == "forward" ? forward : backward) << line;
    }
    EXPECT_FALSE(op == "relu2" && json_field(line, "direction") == "forward")
        << "a fused relu has no forward line: " << line;
    if (op == "optimizer") {
      optimizer = true;
      EXPECT_EQ(kernel, "momentum/" + path) << line;
    }
  }
  EXPECT_TRUE(conv2 && fc1 && optimizer) << "no profile line for conv2, fc1 or the optimizer";
  EXPECT_NE(r.out.find("winograd/" + path), std::string::npos) << "the table names the kernel";
  // The probe's result is cached per CPU and path.
  const std::string cache = read_file(dir.path() + "/cache/devmap/fma_peak.tsv");
  EXPECT_NE(cache.find("/" + path + "\t"), std::string::npos) << cache;
}

INSTANTIATE_TEST_SUITE_P(CpuPath, CpuPathProfile, ::testing::ValuesIn(kCpuPaths),
                         [](const ::testing::TestParamInfo<CpuPath>& p) { return cpu_path_name(p.param); });

// predict --profile reports its forward ops, as a table and as metrics lines.
TEST(PredictProfile, ReportsEveryForwardOpOfThePrediction) {
  TempDir dir;
  ASSERT_EQ(train(dir, {}, {}).exit_code, 0);
  const ProcessResult r =
      run_process({DEVMAP_COORDINATOR_BIN, "predict", kConfig, "--weights", dir.path() + "/w.safetensors", "--input",
                   "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", "--batch", "1000", "--output",
                   dir.path() + "/p.csv", "--metrics", dir.path() + "/p.jsonl", "--profile"},
                  dir.path(), {"TMPDIR=" + dir.path(), "XDG_CACHE_HOME=" + dir.path() + "/cache"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> ops;
  for (const std::string& line : lines_with(read_file(dir.path() + "/p.jsonl"), "profile")) {
    EXPECT_EQ(json_field(line, "direction"), "forward") << line;
    EXPECT_EQ(json_field(line, "calls"), "10") << line;  // 10000 images in batches of 1000
    ops.push_back(json_field(line, "op"));
  }
  for (const char* op : {"conv1", "conv2", "fc1", "logits"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << "no profile line for " << op;
  EXPECT_NE(r.out.find("profile of cpu:0"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace devmap::testing
