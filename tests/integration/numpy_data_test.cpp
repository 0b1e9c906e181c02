// Training and prediction from NumPy files written by NumPy itself: the
// Fashion-MNIST IDX files converted to .npy (uint8) and to a compressed
// .npz (float32, Keras's x_train/y_train names) train the same bits as the
// IDX files, and predict the same labels. Skipped where /usr/bin/python3
// has no numpy (scripts/setup.sh installs python3-numpy).
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
const std::string kData = "/usr/share/datasets/fashion-mnist/";

// Writes, from the first 1280 training and 256 test samples:
//   train_x.npy (uint8 N x 28 x 28), train_y.npy (uint8), test_x.npy, test_y.npy
//   all.npz: x_train, x_test float32 N x 1 x 28 x 28 (byte / 255), y_train, y_test int64 (compressed)
//   bad.npz: images int64, labels int64
const char* kConvert = R"(
import gzip, sys, numpy as np
d, out = sys.argv[1], sys.argv[2]
def idx(name, n, off):
    with gzip.open(d + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)
xs = {k: idx(k[0], k[1], 16).reshape(-1, 28, 28)[:k[2]] for k in [("train-images-idx3-ubyte.gz", 0, 1280), ("t10k-images-idx3-ubyte.gz", 0, 256)]}
ys = {k: idx(k[0], k[1], 8)[:k[2]] for k in [("train-labels-idx1-ubyte.gz", 0, 1280), ("t10k-labels-idx1-ubyte.gz", 0, 256)]}
tx, vx = list(xs.values()); ty, vy = list(ys.values())
np.save(out + "/train_x.npy", tx); np.save(out + "/train_y.npy", ty)
np.save(out + "/test_x.npy", vx); np.save(out + "/test_y.npy", vy)
f32 = lambda a: (a.astype(np.float32) / np.float32(255)).reshape(-1, 1, 28, 28)
np.savez_compressed(out + "/all.npz", x_train=f32(tx), y_train=ty.astype(np.int64), x_test=f32(vx), y_test=vy.astype(np.int64))
np.savez(out + "/bad.npz", images=tx.astype(np.int64), labels=ty.astype(np.int64))
)";

class NumpyData : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kData + "t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "run scripts/setup.sh";
    if (run_process({"/usr/bin/python3", "-c", "import numpy"}, dir_.path()).exit_code != 0)
      GTEST_SKIP() << "/usr/bin/python3 has no numpy (scripts/setup.sh installs python3-numpy)";
    const ProcessResult r = run_process({"/usr/bin/python3", "-c", kConvert, kData, dir_.path()}, dir_.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Trains 20 steps; returns the run's step losses and weights.
  std::string train(const std::string& name, const std::vector<std::string>& data) {
    std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                     "train",
                                     kConfigs + "fashion_mnist_cnn.yaml",
                                     "--set",
                                     "train.max_steps=20",
                                     "--log-every",
                                     "1",
                                     "--out-dir",
                                     dir_.path() + "/" + name};
    for (const std::string& d : data) args.insert(args.end(), {"--set", d});
    if (data.empty()) args.insert(args.end(), {"--set", "data.train_limit=1280", "--set", "data.test_limit=256"});
    const ProcessResult r = run_process(args, dir_.path(), {"TMPDIR=" + dir_.path()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string losses;
    std::istringstream metrics(read_file(dir_.path() + "/" + name + "/metrics.jsonl"));
    for (std::string line; std::getline(metrics, line);)
      if (line.find("\"event\":\"step\"") != std::string::npos) {
        const size_t at = line.find("\"loss\"");
        losses += line.substr(at, line.find(',', at) - at) + "\n";
      }
    EXPECT_FALSE(losses.empty()) << name;
    return losses + read_file(dir_.path() + "/" + name + "/fashion_mnist_cnn.safetensors");
  }
  ProcessResult predict(const std::string& input, const std::string& output) {
    return run_process(
        {DEVMAP_COORDINATOR_BIN, "predict", kConfigs + "fashion_mnist_cnn.yaml", "--weights",
         dir_.path() + "/idx/fashion_mnist_cnn.safetensors", "--input", input, "--output", dir_.path() + "/" + output},
        dir_.path(), {"TMPDIR=" + dir_.path()});
  }
  TempDir dir_;
};

TEST_F(NumpyData, NpyAndNpzTrainTheBitsOfTheIdxFilesAndPredictTheSameLabels) {
  const std::string d = dir_.path() + "/";
  const std::string idx = train("idx", {});
  const std::string npy =
      train("npy", {"data.train_images=" + d + "train_x.npy", "data.train_labels=" + d + "train_y.npy",
                    "data.test_images=" + d + "test_x.npy", "data.test_labels=" + d + "test_y.npy"});
  const std::string npz = train("npz", {"data.train_images=" + d + "all.npz", "data.train_labels=" + d + "all.npz",
                                        "data.test_images=" + d + "all.npz", "data.test_labels=" + d + "all.npz"});
  EXPECT_TRUE(idx == npy) << "uint8 .npy trained other bits than the IDX files";
  EXPECT_TRUE(idx == npz) << "float32 .npz trained other bits than the IDX files";

  ProcessResult a = predict(kData + "t10k-images-idx3-ubyte.gz", "idx.csv");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ProcessResult b = predict(d + "test_x.npy", "npy.csv");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  ProcessResult c = predict(d + "all.npz:x_test", "npz.csv");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string npy_rows = read_file(d + "npy.csv"), npz_rows = read_file(d + "npz.csv");
  EXPECT_EQ(npy_rows, npz_rows);
  EXPECT_EQ(read_file(d + "idx.csv").substr(0, npy_rows.size()), npy_rows);  // the first 256 of 10000
}

TEST_F(NumpyData, ThePlanCountsEachSetsOwnLabels) {
  const std::string d = dir_.path() + "/";
  const ProcessResult r =
      run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfigs + "fashion_mnist_cnn.yaml", "--json", "--set",
                   "data.train_images=" + d + "all.npz", "--set", "data.train_labels=" + d + "all.npz", "--set",
                   "data.test_images=" + d + "all.npz", "--set", "data.test_labels=" + d + "all.npz"},
                  dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // x_train's 1280 samples and x_test's 256 (not x_train's again): a byte
  // of label and 8 of visiting order each; the images stay in the file.
  const uint64_t want = (1280 + 256) * 9;
  EXPECT_NE(r.out.find("\"datasets_bytes\":" + std::to_string(want) + ","), std::string::npos) << r.out;
}

TEST_F(NumpyData, WrongTypesAndMissingMembersAreBadInputThatSaysWhatToDo) {
  const std::string d = dir_.path() + "/";
  // Weights for predict: one step is enough.
  const ProcessResult w =
      run_process({DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn.yaml", "--set", "train.max_steps=1",
                   "--set", "data.train_limit=64", "--set", "data.test_limit=64", "--out-dir", d + "idx"},
                  dir_.path(), {"TMPDIR=" + dir_.path()});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ProcessResult r = run_process(
      {DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn.yaml", "--set",
       "data.train_images=" + d + "bad.npz", "--set", "data.train_labels=" + d + "bad.npz", "--out-dir", d + "bad"},
      dir_.path(), {"TMPDIR=" + dir_.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.npz:images' holds int64 images: devmap reads uint8 (pixels 0-255) or float32 (as they "
                       "are); convert with arr.astype(numpy.float32)"),
            std::string::npos)
      << r.err;
  r = predict(d + "all.npz", "x.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("all.npz' has no array 'images' or 'x' or 'x_input' (it holds x_train, y_train, x_test, "
                       "y_test): name one as "),
            std::string::npos)
      << r.err;
  r = predict(d + "all.npz:x_val", "x.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("all.npz' has no array 'x_val' (it holds x_train, y_train, x_test, y_test)"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace devmap::testing
