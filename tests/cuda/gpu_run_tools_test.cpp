// The coordinator's tools on a GPU (skipped without a GPU or the data set):
// - `train --profile` with the conv layers on gpu:0: every conv row holds
//   device time (nonzero), and a send's row holds the send, not the
//   forward still queued before it (small against the convolutions);
// - `calibrate` of the split config: gpu:0's forward and backward get
//   positive costs (device time: the backward is no longer in "overhead");
// - a data-parallel pair of ranks on this one machine (mpirun, two
//   replicas of the all-GPU map sharing gpu:0) trains and agrees with
//   itself (skipped, with the reason, where mpirun is missing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "tests/cuda/gpu_run_util.h"

namespace devmap::test {
namespace {

TEST(GpuProfile, ConvRowsHoldDeviceTimeAndSendRowsAreSmall) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  const TrainRun r = run_coordinator(
      "train", shipped("fashion_mnist_cnn_gpu_split.yaml"), dir.path(), "profile",
      {"--profile", "--set", "train.batch_size=64", "--set", "train.max_steps=20", "--set", "data.train_limit=2048"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  double conv_ms = 0, send_ms = 0;
  int conv_rows = 0;
  std::istringstream in(testing::read_file(dir.path() + "/profile/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    if (json_field(line, "event") != "profile" || json_field(line, "device") != "gpu:0") continue;
    const std::string op = json_field(line, "op");
    const double ms = std::stod(json_field(line, "total_ms"));
    if (op == "conv1" || op == "conv2") {
      EXPECT_GT(ms, 0.0) << line;
      conv_ms += ms;
      ++conv_rows;
    }
    if (op.rfind("send", 0) == 0 || json_field(line, "direction") == "send") send_ms = std::max(send_ms, ms);
  }
  EXPECT_GE(conv_rows, 4) << "conv1 and conv2, forward and backward: " << r.out;
  EXPECT_LT(send_ms, 0.5 * conv_ms) << "a send's row (" << send_ms << " ms) holds more than half the convolutions' "
                                    << conv_ms << " ms: the forward queued before the copy counts as the send\n"
                                    << r.out;
}

TEST(GpuCalibration, GivesTheGpusOpsPositiveCosts) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  testing::TempDir dir;
  const std::string cache = dir.path() + "/calibration.tsv";
  const testing::ProcessResult p =
      testing::run_process({bin_dir() + "/coordinator", "calibrate", shipped("fashion_mnist_cnn_gpu_split.yaml"),
                            "--calibration", cache, "--set", "train.batch_size=64"},
                           dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  // "  gpu:0 (...), batch 64: forward 1.2 ms, backward 2.3 ms, update 0.1 ms"
  const std::regex line("gpu:0[^\\n]*batch ([0-9]+): forward ([0-9.]+) ms, backward ([0-9.]+) ms");
  const std::string text = p.out + p.err;
  int lines = 0;
  double forward_ms = 0, backward_ms = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
    ++lines;
    forward_ms += std::stod((*it)[2]);
    backward_ms += std::stod((*it)[3]);
  }
  EXPECT_GT(lines, 0) << "no gpu:0 line in calibrate's output:\n" << text;
  EXPECT_GT(forward_ms, 0.0) << text;
  EXPECT_GT(backward_ms, 0.0) << "the backward is the device's time, not lost in the overhead:\n" << text;
  std::cout << text.substr(0, 3000);
}

TEST(GpuDataParallel, TwoRanksOnOneMachineTrain) {
  DEVMAP_REQUIRE_GPU_AND_DATA();
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun is not on PATH: a data-parallel pair needs Open MPI's mpirun";
  testing::TempDir dir;
  const std::string images = data_dir() + "/t10k-images-idx3-ubyte.gz",
                    labels = data_dir() + "/t10k-labels-idx1-ubyte.gz";
  auto pair = [&](const std::string& tag) {
    std::filesystem::create_directories(dir.path() + "/" + tag);
    return testing::run_process({"mpirun",
                                 "--host",
                                 "localhost:2",
                                 "-np",
                                 "2",
                                 "--bind-to",
                                 "none",
                                 "--mca",
                                 "btl",
                                 "tcp,self",
                                 bin_dir() + "/coordinator",
                                 "train",
                                 shipped("fashion_mnist_cnn_gpu.yaml"),
                                 "--set",
                                 "data_parallel.replicas=2",
                                 "--set",
                                 "data.train_images=" + images,
                                 "--set",
                                 "data.train_labels=" + labels,
                                 "--set",
                                 "data.test_images=" + images,
                                 "--set",
                                 "data.test_labels=" + labels,
                                 "--set",
                                 "data.train_limit=1024",
                                 "--set",
                                 "data.test_limit=256",
                                 "--set",
                                 "train.batch_size=64",
                                 "--set",
                                 "train.max_steps=10",
                                 "--set",
                                 "train.checkpoint=" + dir.path() + "/" + tag + "/w.safetensors"},
                                dir.path() + "/" + tag, {"TMPDIR=" + dir.path() + "/" + tag});
  };
  const testing::ProcessResult first = pair("first"), second = pair("second");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(param_distance(dir.path() + "/first/w.safetensors", dir.path() + "/second/w.safetensors").same_bits)
      << "two runs of the same data-parallel pair differ";
}

}  // namespace
}  // namespace devmap::test
