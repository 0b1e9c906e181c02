// The fixture of the lose-nothing tests (safety_test.cpp,
// lose_nothing_test.cpp): runs of the real coordinator in a work folder
// that is also their TMPDIR, and the checks that nothing of a run is left
// and every file that existed before it is unchanged.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/support/run_process.h"

namespace devmap::testing {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

inline const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";
inline const std::string kTestImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

struct Result {
  int exit_code = -1;
  pid_t pid = -1;
  std::string out, err;
};

// Every regular file under `dir` and its bytes.
inline std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const std::string& p : tree_entries(dir))
    if (fs::is_regular_file(p)) files[p] = read_file(p);
  return files;
}

class Safety : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kTestImages)) GTEST_SKIP() << kTestImages << " is absent: run scripts/setup.sh";
    fs::create_directories(work_);
    fs::create_directories(logs_);
  }

  // Runs the coordinator with `args` in the work folder (TMPDIR too), its
  // output in the logs folder; `wrapper` (a shell snippet taking the command
  // as "$@") runs it in a namespace or under a limit.
  Result coordinator(std::vector<std::string> args, const std::vector<std::string>& env = {},
                     const std::string& wrapper = "") {
    std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_};
    argv.insert(argv.end(), env.begin(), env.end());
    if (!wrapper.empty()) argv.insert(argv.end(), {"/bin/sh", "-c", wrapper, "sh"});
    argv.push_back(DEVMAP_COORDINATOR_BIN);
    argv.insert(argv.end(), args.begin(), args.end());
    BackgroundProcess p(argv, logs_);
    Result r;
    r.pid = p.pid();
    r.exit_code = p.wait(milliseconds(240000));
    r.out = read_file(logs_ + "/bg-stdout.txt");
    r.err = p.err();
    return r;
  }

  // A short training of the MLP: `steps` steps of 32 images.
  std::vector<std::string> mlp_train(int steps, const std::string& checkpoint,
                                     const std::vector<std::string>& extra = {}) {
    std::vector<std::string> a = {"train", kConfigs + "fashion_mnist_mlp.yaml",
                                  "--set", "data.train_limit=320",
                                  "--set", "data.test_limit=64",
                                  "--set", "train.batch_size=32",
                                  "--set", "train.max_steps=" + std::to_string(steps),
                                  "--set", "devices.cpu:0.threads=1",
                                  "--set", "train.checkpoint=" + checkpoint};
    if (std::find(extra.begin(), extra.end(), "--metrics") == extra.end())
      a.insert(a.end(), {"--metrics", work_ + "/train-" + std::to_string(runs_++) + ".jsonl"});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // Trains the MLP for two steps into work/model.safetensors.
  void make_weights() {
    Result r = coordinator(mlp_train(2, weights_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::vector<std::string> predict(const std::string& weights, const std::string& input, const std::string& output) {
    return {"predict",   kConfigs + "fashion_mnist_mlp.yaml",
            "--weights", weights,
            "--input",   input,
            "--output",  output,
            "--batch",   "500",
            "--metrics", work_ + "/predict.jsonl"};
  }

  // Nothing of run `r` in /dev/shm or the work folder: no segment, socket
  // folder, lock or temporary file.
  void expect_nothing_left(const Result& r) {
    EXPECT_EQ(shm_entries("devmap-" + std::to_string(r.pid) + "-"), std::vector<std::string>{});
    for (const std::string& p : tree_entries(work_)) {
      const std::string name = fs::path(p).filename().string();
      EXPECT_EQ(name.rfind("devmap-", 0), std::string::npos) << p;
      EXPECT_EQ(name.find(".tmp-"), std::string::npos) << p;
      EXPECT_FALSE(name.ends_with(".lock")) << p;
      EXPECT_EQ(name.find(".devmap-probe-"), std::string::npos) << p;
    }
  }

  // Every file of `before` still holds its bytes.
  void expect_unchanged(const std::map<std::string, std::string>& before) {
    for (const auto& [path, bytes] : before) {
      ASSERT_TRUE(fs::exists(path)) << path << " was removed";
      EXPECT_TRUE(read_file(path) == bytes) << path << " changed";
    }
  }

  TempDir dir_;
  std::string work_ = dir_.path() + "/work";
  std::string logs_ = dir_.path() + "/logs";
  std::string weights_ = work_ + "/model.safetensors";
  int runs_ = 0;
};

// Whether this process can make a mount namespace (root, or CAP_SYS_ADMIN).
inline bool can_unshare_mounts() {
  return std::system("unshare -m true >/dev/null 2>&1") == 0;
}

}  // namespace devmap::testing
