// The coordinator's tools on a GPU (skipped without a GPU or the data set):
// - `train --profile` with the conv layers on gpu:0: every conv row holds
//   device time (nonzero), and a send's row holds the send, not the
//   forward still queued before it (small against the convolutions);
// - `calibrate` of the split config: gpu:0's ops get positive costs;
// - a data-parallel pair of ranks on this one machine (mpirun, two
//   replicas of the all-GPU map sharing gpu:0) trains and agrees with
//   itself (skipped, with the reason, where mpirun is missing).
#include <gtest/gtest.h>

#include <cstdlib>

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
  const std::string text = testing::read_file(cache);
  EXPECT_NE(text.find("gpu"), std::string::npos) << "no gpu:0 entry in the calibration cache:\n" << text;
  std::cout << text.substr(0, 2000);
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
