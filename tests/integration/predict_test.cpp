// Train, save, predict: weights saved under one device map predict the
// same labels under another; CSV pixel input works; damaged weights are a
// clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
const std::string kTest = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

class Predict : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kTest)) GTEST_SKIP() << kTest << " is absent: run scripts/setup.sh";
    ProcessResult r =
        run_process({DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_cnn_split.yaml", "--metrics",
                     dir_.path() + "/train.jsonl", "--set", "train.max_steps=20", "--set", "data.train_limit=1280",
                     "--set", "data.test_limit=100", "--set", "train.checkpoint=" + weights_},
                    dir_.path(), {"TMPDIR=" + dir_.path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  ProcessResult predict(const std::string& config, const std::string& input, const std::string& output) {
    return run_process({DEVMAP_COORDINATOR_BIN, "predict", kConfigs + config, "--weights", weights_, "--input", input,
                        "--output", output, "--batch", "300", "--metrics", dir_.path() + "/p.jsonl"},
                       dir_.path(), {"TMPDIR=" + dir_.path()});
  }
  TempDir dir_;
  std::string weights_ = dir_.path() + "/model.safetensors";
};

TEST_F(Predict, WeightsFromOneDeviceMapPredictTheSameUnderAnother) {
  std::string one = dir_.path() + "/one.csv", three = dir_.path() + "/three.csv";
  ProcessResult a = predict("fashion_mnist_cnn.yaml", kTest, one);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ProcessResult b = predict("fashion_mnist_cnn_3way.yaml", kTest, three);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  std::string rows = read_file(one);
  EXPECT_EQ(rows, read_file(three));
  EXPECT_EQ(rows.substr(0, 16), "ImageId,Label\n1,");
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 10001);
  EXPECT_NE(rows.find("\n10000,"), std::string::npos) << "ids are 1-based";
}

TEST_F(Predict, CsvPixelRowsWithAHeaderAreInput) {
  std::string csv = dir_.path() + "/test.csv";
  {
    std::ofstream f(csv);
    f << "pixel0";
    for (int i = 1; i < 784; ++i) f << ",pixel" << i;
    f << "\n";
    for (int row = 0; row < 3; ++row) {
      for (int i = 0; i < 784; ++i) f << (i ? "," : "") << (row * 40 + i) % 256;
      f << "\n";
    }
  }
  ProcessResult r = predict("fashion_mnist_cnn.yaml", csv, dir_.path() + "/out.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string rows = read_file(dir_.path() + "/out.csv");
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 4) << rows;
}

TEST_F(Predict, DamagedWeightsAreABadInputError) {
  std::string bad = dir_.path() + "/bad.safetensors";
  std::string bytes = read_file(weights_);
  std::ofstream(bad) << bytes.substr(0, bytes.size() - 4);  // a truncated file
  ProcessResult r =
      run_process({DEVMAP_COORDINATOR_BIN, "predict", kConfigs + "fashion_mnist_cnn.yaml", "--weights", bad, "--input",
                   kTest, "--output", dir_.path() + "/x.csv", "--metrics", dir_.path() + "/p.jsonl"},
                  dir_.path(), {"TMPDIR=" + dir_.path()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("bad.safetensors"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace devmap::testing
