// IDX reader: small gzip and plain files written here, and the real
// Fashion-MNIST test labels when Debian's dataset-fashion-mnist is installed.
#include "coordinator/data/idx_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/base/error.h"
#include "tests/coordinator/config_test_util.h"
#include "tests/coordinator/temp_dir.h"

namespace devmap {
namespace {

using test::error_of;

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string image_file(uint32_t count, uint32_t rows, uint32_t cols, int extra_bytes = 0) {
  std::string s = be32(0x803) + be32(count) + be32(rows) + be32(cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i) s += static_cast<char>(i % 256);
  return s + std::string(static_cast<size_t>(std::max(extra_bytes, 0)), '\0');
}

std::string label_file(uint32_t count) {
  std::string s = be32(0x801) + be32(count);
  for (uint32_t i = 0; i < count; ++i) s += static_cast<char>(i % 10);
  return s;
}

// Writes `bytes` gzip-compressed.
std::string write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
  return path;
}

TEST(IdxReader, ReadsPlainImages) {
  test::TempDir dir;
  const ImageSet set = load_idx_images(dir.write("img", image_file(3, 2, 4)));
  EXPECT_EQ(set.count, 3);
  EXPECT_EQ(set.rows, 2);
  EXPECT_EQ(set.cols, 4);
  ASSERT_EQ(set.bytes.size(), 24u);
  EXPECT_EQ(set.bytes[0], 0);
  EXPECT_EQ(set.bytes[5], 5);
  EXPECT_EQ(set.bytes[23], 23);
  EXPECT_FLOAT_EQ(pixel_value(set.bytes[5]), 5.0f / 255.0f);
}

TEST(IdxReader, ReadsGzipAndHonoursTheLimit) {
  test::TempDir dir;
  const std::string path = write_gz(dir.file("img.gz"), image_file(300, 16, 16));
  const ImageSet all = load_idx_images(path);
  EXPECT_EQ(all.count, 300);
  EXPECT_FLOAT_EQ(pixel_value(all.bytes[255]), 1.0f);
  const ImageSet some = load_idx_images(path, 7);
  EXPECT_EQ(some.count, 7);
  EXPECT_EQ(some.bytes.size(), 7u * 256u);
  EXPECT_EQ(load_idx_images(path, 1000).count, 300);  // a limit above the count reads all

  const std::string labels = write_gz(dir.file("lab.gz"), label_file(25));
  const std::vector<uint8_t> l = load_idx_labels(labels);
  ASSERT_EQ(l.size(), 25u);
  EXPECT_EQ(l[13], 3);
  EXPECT_EQ(load_idx_labels(labels, 4).size(), 4u);
  EXPECT_EQ(load_idx_labels(dir.write("lab", label_file(5))).size(), 5u);
}

TEST(IdxReader, LoadsAPairWithMatchingCounts) {
  test::TempDir dir;
  const std::string images = dir.write("img", image_file(5, 2, 2));
  const LabeledImages pair = load_idx_dataset(images, dir.write("lab", label_file(5)), 3);
  EXPECT_EQ(pair.images.count, 3);
  EXPECT_EQ(pair.labels.size(), 3u);
  const std::string six = dir.write("lab6", label_file(6));
  EXPECT_EQ(error_of([&] { load_idx_dataset(images, six); }),
            "'" + images + "' holds 5 images but '" + six + "' holds 6 labels: they must come in pairs");
}

TEST(IdxReader, MissingFile) {
  test::TempDir dir;
  const std::string path = dir.file("nope.gz");
  EXPECT_EQ(error_of([&] { load_idx_labels(path); }), "cannot open '" + path + "': No such file or directory");
  EXPECT_EQ(error_of([&] { load_idx_images("/usr/share/datasets/none/x-idx3-ubyte.gz"); }),
            "cannot open '/usr/share/datasets/none/x-idx3-ubyte.gz': No such file or directory (Fashion-MNIST comes "
            "from Debian's package dataset-fashion-mnist: run scripts/setup.sh)");
  try {
    load_idx_labels(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
}

TEST(IdxReader, WrongMagic) {
  test::TempDir dir;
  const std::string labels = dir.write("lab", label_file(3));
  EXPECT_EQ(
      error_of([&] { load_idx_images(labels); }),
      "'" + labels + "' is not an IDX image file: its magic number is 0x00000801 (a label file), expected 0x00000803");
  const std::string text = dir.write("txt", "hello world\n");
  EXPECT_EQ(error_of([&] { load_idx_labels(text); }),
            "'" + text + "' is not an IDX label file: its magic number is 0x68656c6c, expected 0x00000801");
}

TEST(IdxReader, TruncatedFiles) {
  test::TempDir dir;
  const std::string header = dir.write("h", be32(0x803) + be32(2));
  EXPECT_EQ(error_of([&] { load_idx_images(header); }),
            "'" + header + "' is truncated: it ends inside the header (rows)");
  std::string short_images = image_file(4, 3, 3);
  short_images.resize(short_images.size() - 5);
  const std::string plain = dir.write("img", short_images);
  EXPECT_EQ(error_of([&] { load_idx_images(plain); }),
            "'" + plain +
                "' is truncated: the header announces 4 images of 3x3 (36 bytes after the header) but only 31 "
                "bytes follow");
  const std::string gz = write_gz(dir.file("img.gz"), short_images);
  EXPECT_EQ(error_of([&] { load_idx_images(gz); }),
            "'" + gz +
                "' is truncated: the header announces 4 images of 3x3 (36 bytes after the header) but only 31 "
                "bytes follow");
  // A gzip stream cut short.
  std::string bytes;
  {
    const std::string full = write_gz(dir.file("full.gz"), label_file(5000));
    std::ifstream in(full, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = dir.write("cut.gz", bytes.substr(0, bytes.size() / 2));
  const std::string message = error_of([&] { load_idx_labels(cut); });
  EXPECT_EQ(message.rfind("'" + cut + "' is truncated", 0), 0u) << message;
}

TEST(IdxReader, CountsThatDisagreeWithTheData) {
  test::TempDir dir;
  const std::string extra = dir.write("img", image_file(2, 2, 2, 3));
  EXPECT_EQ(error_of([&] { load_idx_images(extra); }),
            "'" + extra +
                "' holds 3 bytes more than the header announces (2 images of 2x2): the count in its header is "
                "wrong");
  EXPECT_EQ(load_idx_images(extra, 1).count, 1);  // a prefix does not look at the end
  const std::string huge = dir.write("huge", be32(0x803) + be32(1) + be32(100000) + be32(100000));
  EXPECT_EQ(error_of([&] { load_idx_images(huge); }),
            "'" + huge + "' has an implausible image size 100000x100000 in its header");
}

TEST(IdxReader, RealFashionMnistTestLabels) {
  const std::string path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path << " is absent: install Debian's dataset-fashion-mnist (scripts/setup.sh)";
  const std::vector<uint8_t> labels = load_idx_labels(path);
  ASSERT_EQ(labels.size(), 10000u);
  std::vector<int> per_class(10, 0);
  for (uint8_t l : labels) {
    ASSERT_LT(l, 10);
    ++per_class[l];
  }
  for (int n : per_class) EXPECT_EQ(n, 1000);  // Fashion-MNIST's test set is balanced
}

}  // namespace
}  // namespace devmap
