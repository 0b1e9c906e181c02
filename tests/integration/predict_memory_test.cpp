// The coordinator's memory does not grow with the length of a prediction's
// input: it reads and converts the images as it feeds them. Predicts 10000
// and 100000 images (the test set repeated, gzip IDX) and compares the
// coordinator's peak resident memory (VmHWM, from the done event).
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kTestImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
const std::string kConfig = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_mlp.yaml";

// Writes a gzip IDX image file of `count` images: the test set, repeated.
void write_repeated_images(const std::string& path, uint32_t count) {
  gzFile in = gzopen(kTestImages.c_str(), "rb");
  ASSERT_NE(in, nullptr);
  std::vector<unsigned char> header(16), pixels(10000 * 784);
  ASSERT_EQ(gzread(in, header.data(), 16), 16);
  ASSERT_EQ(gzread(in, pixels.data(), static_cast<unsigned>(pixels.size())), static_cast<int>(pixels.size()));
  gzclose(in);
  for (int b = 0; b < 4; ++b) header[4 + b] = static_cast<unsigned char>(count >> (24 - 8 * b));
  gzFile out = gzopen(path.c_str(), "wb1");
  ASSERT_NE(out, nullptr);
  gzwrite(out, header.data(), 16);
  for (uint32_t done = 0; done < count; done += 10000) {
    const uint32_t n = std::min<uint32_t>(10000, count - done);
    ASSERT_EQ(gzwrite(out, pixels.data(), n * 784), static_cast<int>(n * 784));
  }
  ASSERT_EQ(gzclose(out), Z_OK);
}

int64_t predict_vm_hwm(const TempDir& dir, const std::string& weights, const std::string& images, int64_t count) {
  const std::string metrics = images + ".jsonl", csv = images + ".csv";
  ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "predict", kConfig, "--weights", weights, "--input", images,
                                 "--output", csv, "--batch", "1000", "--metrics", metrics},
                                dir.path(), {"TMPDIR=" + dir.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> done = lines_with(read_file(metrics), "done");
  if (done.size() != 1) return -1;
  EXPECT_EQ(json_field(done[0], "job"), "predict");
  EXPECT_EQ(json_field(done[0], "images"), std::to_string(count));
  const std::string rows = read_file(csv);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), count + 1);  // and the header
  return std::stoll(json_field(done[0], "coordinator_vm_hwm_bytes"));
}

TEST(PredictMemory, CoordinatorMemoryDoesNotGrowWithTheInput) {
  if (!std::filesystem::exists(kTestImages)) GTEST_SKIP() << kTestImages << " is absent: run scripts/setup.sh";
  TempDir dir;
  const std::string weights = dir.path() + "/mlp.safetensors";
  ProcessResult train = run_process({DEVMAP_COORDINATOR_BIN, "train", kConfig, "--set", "train.max_steps=1", "--set",
                                     "data.test_limit=64", "--checkpoint", weights, "--out-dir", dir.path()},
                                    dir.path(), {"TMPDIR=" + dir.path()});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  const std::string small = dir.path() + "/small-idx3-ubyte.gz", large = dir.path() + "/large-idx3-ubyte.gz";
  write_repeated_images(small, 10000);
  write_repeated_images(large, 100000);
  const int64_t hwm_small = predict_vm_hwm(dir, weights, small, 10000);
  const int64_t hwm_large = predict_vm_hwm(dir, weights, large, 100000);
  ASSERT_GT(hwm_small, 0);
  ASSERT_GT(hwm_large, 0);
  std::printf("coordinator VmHWM: %lld bytes for 10000 images, %lld bytes for 100000 (difference %lld)\n",
              static_cast<long long>(hwm_small), static_cast<long long>(hwm_large),
              static_cast<long long>(hwm_large - hwm_small));
  EXPECT_LT(hwm_large - hwm_small, int64_t{8} << 20);
}

}  // namespace
}  // namespace devmap::testing
