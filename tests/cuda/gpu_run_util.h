// Helpers for the GPU tests that train through the coordinator (the
// bundle's binaries, or this build's): a training run's losses, its
// checkpoint and its stderr, and two checkpoints' parameters compared.
// The data is the Fashion-MNIST test set (the bundle carries only it):
// $DEVMAP_DATA_DIR or Debian's /usr/share/datasets/fashion-mnist.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/graph/safetensors.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/run_process.h"

namespace devmap::test {

inline std::string data_dir() {
  const char* d = std::getenv("DEVMAP_DATA_DIR");
  return d != nullptr ? d : "/usr/share/datasets/fashion-mnist";
}

// Skips the current test, with the reason, without a GPU or the data set.
#define DEVMAP_REQUIRE_GPU_AND_DATA()                                                        \
  do {                                                                                       \
    DEVMAP_REQUIRE_GPU();                                                                    \
    if (!std::filesystem::exists(::devmap::test::data_dir() + "/t10k-images-idx3-ubyte.gz")) \
      GTEST_SKIP() << "Fashion-MNIST test set not found in " << ::devmap::test::data_dir()   \
                   << " (set DEVMAP_DATA_DIR)";                                              \
  } while (0)

// The value of `key` in one JSON line of the metrics log, quotes removed.
inline std::string json_field(const std::string& line, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("\"" + key + "\":(\"[^\"]*\"|[^,}\\]]+)"))) return "";
  std::string v = m[1];
  return v.size() >= 2 && v.front() == '"' ? v.substr(1, v.size() - 2) : v;
}

struct TrainRun {
  int exit_code = -1;
  std::string out, err;
  std::vector<double> losses;  // one per step
  std::string checkpoint;      // the weights after the last step
};

// `coordinator COMMAND CONFIG` on the test images (train and test sets)
// with `extra` arguments, in DIR/TAG; the metrics' step losses.
inline TrainRun run_coordinator(const std::string& command, const std::string& config, const std::string& dir,
                                const std::string& tag, const std::vector<std::string>& extra) {
  const std::string sub = dir + "/" + tag, metrics = sub + "/metrics.jsonl";
  std::filesystem::create_directories(sub);
  const std::string images = data_dir() + "/t10k-images-idx3-ubyte.gz",
                    labels = data_dir() + "/t10k-labels-idx1-ubyte.gz";
  TrainRun r;
  r.checkpoint = sub + "/weights.safetensors";
  std::vector<std::string> args = {bin_dir() + "/coordinator",
                                   command,
                                   config,
                                   "--metrics",
                                   metrics,
                                   "--log-every",
                                   "1",
                                   "--set",
                                   "data.train_images=" + images,
                                   "--set",
                                   "data.train_labels=" + labels,
                                   "--set",
                                   "data.test_images=" + images,
                                   "--set",
                                   "data.test_labels=" + labels,
                                   "--set",
                                   "data.test_limit=256"};
  if (command == "train") args.insert(args.end(), {"--set", "train.checkpoint=" + r.checkpoint});
  args.insert(args.end(), extra.begin(), extra.end());
  const testing::ProcessResult p = testing::run_process(args, sub, {"TMPDIR=" + sub});
  r.exit_code = p.exit_code;
  r.out = p.out;
  r.err = p.err;
  std::istringstream in(testing::read_file(metrics));
  for (std::string line; std::getline(in, line);)
    if (json_field(line, "event") == "step") r.losses.push_back(std::stod(json_field(line, "loss")));
  return r;
}

// A shipped config's path.
inline std::string shipped(const std::string& name) {
  return config_dir() + "/" + name;
}

// Arguments that put every op of a config on gpu:0.
inline std::vector<std::string> all_on_gpu() {
  return {"--set", "devices.gpu:0.memory_limit=0", "--set", "device_map.default=gpu:0"};
}

// The F32 tensors of two checkpoints: whether every bit agrees, and the
// largest absolute difference of an element.
struct ParamDistance {
  bool same_bits = true;
  double max_abs = 0;
};

inline std::vector<float> read_tensor(const std::string& path, const SafetensorsLayout& layout,
                                      const SafetensorsEntry& e) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(layout.data_start + e.begin));
  std::vector<float> v((e.end - e.begin) / sizeof(float));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

inline ParamDistance param_distance(const std::string& a, const std::string& b) {
  const SafetensorsLayout la = read_safetensors_layout(a), lb = read_safetensors_layout(b);
  ParamDistance d;
  EXPECT_EQ(la.entries.size(), lb.entries.size()) << a << " against " << b;
  for (const SafetensorsEntry& ea : la.entries) {
    const SafetensorsEntry* eb = lb.find(ea.name);
    if (ea.dtype != FileDtype::kF32 || eb == nullptr) continue;
    const std::vector<float> va = read_tensor(a, la, ea), vb = read_tensor(b, lb, *eb);
    if (va.size() != vb.size()) {
      ADD_FAILURE() << ea.name << ": " << va.size() << " against " << vb.size() << " elements";
      d.same_bits = false;
      continue;
    }
    for (size_t i = 0; i < va.size(); ++i) {
      if (std::memcmp(&va[i], &vb[i], sizeof(float)) != 0) d.same_bits = false;
      d.max_abs = std::max(d.max_abs, std::fabs(static_cast<double>(va[i]) - vb[i]));
    }
  }
  return d;
}

}  // namespace devmap::test
