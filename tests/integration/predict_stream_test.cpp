// Predict streams its input (predict_memory_test.cpp: the coordinator's peak
// memory does not grow with the input's length): a huge --batch is capped at the input's images,
// coordinator.memory_limit is checked before anything runs, and
// --probabilities writes each class's softmax beside the label.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
const std::string kTest = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// The pixels of the Fashion-MNIST test images (10000 of 28x28).
std::string test_pixels() {
  gzFile f = gzopen(kTest.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  std::string all;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return all.substr(16);
}

// Writes a gzip IDX image file of the test images repeated `times` times.
void write_repeated(const std::string& path, const std::string& pixels, int times) {
  gzFile f = gzopen(path.c_str(), "wb1");
  ASSERT_NE(f, nullptr);
  const uint32_t count = static_cast<uint32_t>(pixels.size() / 784) * static_cast<uint32_t>(times);
  const std::string header = be32(0x803) + be32(count) + be32(28) + be32(28);
  gzwrite(f, header.data(), static_cast<unsigned>(header.size()));
  for (int t = 0; t < times; ++t)
    ASSERT_EQ(gzwrite(f, pixels.data(), static_cast<unsigned>(pixels.size())), static_cast<int>(pixels.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// The integer after "KEY": in the first line of `text` holding `event`.
int64_t event_field(const std::string& text, const std::string& event, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"event\":\"" + event + "\"") == std::string::npos) continue;
    size_t at = line.find("\"" + key + "\":");
    if (at == std::string::npos) return -1;
    return std::stoll(line.substr(at + key.size() + 3));
  }
  return -1;
}

class PredictStream : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kTest)) GTEST_SKIP() << kTest << " is absent: run scripts/setup.sh";
    ProcessResult r =
        run_process({DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_mlp.yaml", "--metrics",
                     dir_.path() + "/train.jsonl", "--set", "train.max_steps=20", "--set", "data.train_limit=1280",
                     "--set", "data.test_limit=100", "--set", "train.checkpoint=" + weights_},
                    dir_.path(), {"TMPDIR=" + dir_.path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Runs predict on the MLP config; its metrics go to NAME.jsonl, rows to NAME.csv.
  ProcessResult predict(const std::string& name, const std::string& input, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {DEVMAP_COORDINATOR_BIN,
                                     "predict",
                                     kConfigs + "fashion_mnist_mlp.yaml",
                                     "--weights",
                                     weights_,
                                     "--input",
                                     input,
                                     "--output",
                                     csv(name),
                                     "--metrics",
                                     dir_.path() + "/" + name + ".jsonl"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, dir_.path(), {"TMPDIR=" + dir_.path()});
  }
  std::string csv(const std::string& name) const { return dir_.path() + "/" + name + ".csv"; }
  std::string metrics(const std::string& name) const { return read_file(dir_.path() + "/" + name + ".jsonl"); }
  TempDir dir_;
  std::string weights_ = dir_.path() + "/mlp.safetensors";
};

TEST_F(PredictStream, ProbabilitiesAreTheSoftmaxBesideEachLabel) {
  ProcessResult plain = predict("plain", kTest, {"--batch", "300"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ProcessResult r = predict("probs", kTest, {"--batch", "300", "--probabilities"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(read_file(csv("probs")));
  std::istringstream labels_in(read_file(csv("plain")));
  std::string line, label_line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "ImageId,Label,p0,p1,p2,p3,p4,p5,p6,p7,p8,p9");
  ASSERT_TRUE(std::getline(labels_in, label_line));
  int64_t rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    ASSERT_TRUE(std::getline(labels_in, label_line));
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string c; std::getline(row, c, ',');) cells.push_back(c);
    ASSERT_EQ(cells.size(), 12u) << line;
    EXPECT_EQ(cells[0], std::to_string(rows));
    EXPECT_EQ(cells[0] + "," + cells[1], label_line) << "--probabilities changes no label";
    double sum = 0, max = -1;
    std::vector<double> p;
    for (size_t k = 2; k < 12; ++k) {
      size_t used = 0;
      p.push_back(std::stod(cells[k], &used));
      ASSERT_EQ(used, cells[k].size()) << line;
      ASSERT_GE(p.back(), 0.0) << line;
      sum += p.back();
      max = std::max(max, p.back());
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << line;
    const int label = std::stoi(cells[1]);
    ASSERT_TRUE(label >= 0 && label < 10) << line;
    EXPECT_EQ(p[static_cast<size_t>(label)], max) << "the label is the most probable class: " << line;
  }
  EXPECT_EQ(rows, 10000);
}

// A model whose head is logits -> softmax -> argmax: --probabilities writes
// the softmax's values as they are (not the softmax of the softmax), which
// equal the probabilities the same weights give from their logits.
TEST_F(PredictStream, ProbabilitiesOfASoftmaxHeadAreItsOwnValues) {
  const std::string head = dir_.path() + "/softmax_head.yaml";
  std::ofstream(head) << "model:\n  ops:\n"
                         "    - {name: image, op: input, shape: [1, 28, 28]}\n"
                         "    - {name: flat, op: flatten, inputs: [image]}\n"
                         "    - {name: fc1, op: dense, inputs: [flat], units: 256}\n"
                         "    - {name: relu1, op: relu, inputs: [fc1]}\n"
                         "    - {name: logits, op: dense, inputs: [relu1], units: 10}\n"
                         "    - {name: probs, op: softmax, inputs: [logits]}\n"
                         "    - {name: pred, op: argmax, inputs: [probs]}\n"
                         "devices: {cpu:0: {threads: 1}}\n";
  ProcessResult r = predict("from_logits", kTest, {"--batch", "500", "--probabilities"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ProcessResult s = run_process({DEVMAP_COORDINATOR_BIN, "predict", head, "--weights", weights_, "--input", kTest,
                                 "--output", csv("from_softmax"), "--batch", "500", "--probabilities"},
                                dir_.path(), {"TMPDIR=" + dir_.path()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::istringstream a(read_file(csv("from_logits"))), b(read_file(csv("from_softmax")));
  std::string la, lb;
  int64_t rows = 0;
  while (std::getline(a, la)) {
    ASSERT_TRUE(std::getline(b, lb));
    if (rows++ == 0) continue;  // the header
    std::vector<std::string> ca, cb;
    std::istringstream ra(la), rb(lb);
    for (std::string c; std::getline(ra, c, ',');) ca.push_back(c);
    for (std::string c; std::getline(rb, c, ',');) cb.push_back(c);
    ASSERT_EQ(ca.size(), 12u);
    ASSERT_EQ(cb.size(), 12u);
    EXPECT_EQ(ca[1], cb[1]) << la << " / " << lb;
    for (size_t k = 2; k < 12; ++k) EXPECT_NEAR(std::stod(ca[k]), std::stod(cb[k]), 1e-5) << la << " / " << lb;
  }
  EXPECT_EQ(rows, 10001);
}

TEST_F(PredictStream, AHugeBatchIsCappedAtTheInputsImages) {
  const std::string input = dir_.path() + "/100.gz";
  write_repeated(input, test_pixels().substr(0, 100 * 784), 1);
  ProcessResult r = predict("capped", input, {"--batch", "16777216"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(event_field(metrics("capped"), "memory_plan", "batch"), 100);
  EXPECT_EQ(event_field(metrics("capped"), "start", "batch"), 100);
  const std::string rows = read_file(csv("capped"));
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 101);
}

TEST_F(PredictStream, CoordinatorMemoryLimitIsCheckedBeforeTheRun) {
  ProcessResult r = predict("limited", kTest, {"--set", "coordinator.memory_limit=64KiB"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the coordinator needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(input reader 196.0 KiB, input slots "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("but coordinator.memory_limit is 64.0 KiB: raise it"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(csv("limited")));
  ProcessResult fits = predict("fits", kTest, {"--set", "coordinator.memory_limit=16MiB"});
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_NE(metrics("fits").find("\"coordinator\":{\"total_bytes\":"), std::string::npos) << metrics("fits");
  EXPECT_NE(metrics("fits").find("\"limit_bytes\":16777216,\"datasets_bytes\":0,\"input_reader_bytes\":200704"),
            std::string::npos)
      << metrics("fits");
}

TEST(PlanCoordinator, TrainRunChecksTheLimitBeforeItsFirstStep) {
  if (!std::filesystem::exists(kTest)) GTEST_SKIP() << kTest << " is absent: run scripts/setup.sh";
  TempDir dir;
  ProcessResult r =
      run_process({DEVMAP_COORDINATOR_BIN, "train", kConfigs + "fashion_mnist_mlp.yaml", "--metrics",
                   dir.path() + "/m.jsonl", "--set", "data.train_limit=100", "--set", "data.test_limit=100", "--set",
                   "coordinator.memory_limit=256KiB", "--set", "train.checkpoint=" + dir.path() + "/w.safetensors"},
                  dir.path(), {"TMPDIR=" + dir.path()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the coordinator needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(training and test labels and orders 1.8 KiB, input slots "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("but coordinator.memory_limit is 256.0 KiB: raise it, or use data.train_limit"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/w.safetensors"));
}

}  // namespace
}  // namespace devmap::testing
