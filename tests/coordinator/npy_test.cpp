// NumPy .npy files written here byte by byte (NumPy itself writes the
// .npy and .npz files of tests/integration/numpy_data_test.cpp), and how a
// data set converts their pixels.
#include "coordinator/data/npy.h"

#include <gtest/gtest.h>

#include <cstring>

#include "coordinator/data/dataset.h"
#include "coordinator/data/idx_reader.h"
#include "tests/coordinator/config_test_util.h"
#include "tests/coordinator/temp_dir.h"

namespace devmap {
namespace {

using test::error_of;

// A version 1.0 .npy file: header dict padded to a multiple of 64, then `data`.
std::string npy(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\x00';
  s += static_cast<char>(header.size() & 0xff);
  s += static_cast<char>(header.size() >> 8);
  return s + header + data;
}

std::string bytes_0_to(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(i);
  return s;
}

TEST(Npy, ReadsShapeTypeAndDataInPlace) {
  test::TempDir dir;
  const std::string p =
      dir.write("x.npy", npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2, 2), }", bytes_0_to(12)));
  const NpyArray a = open_numpy_array(p, {});
  EXPECT_EQ(a.type, NpyType::kU8);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(a.shape_text(), "(3, 2, 2)");
  EXPECT_EQ(a.data[11], 11);
}

TEST(Npy, SaysHowToWriteWhatItCannotRead) {
  test::TempDir dir;
  EXPECT_EQ(error_of([&] {
              open_numpy_array(dir.write("f.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                                      std::string(16, '\0'))),
                               {});
            }),
            "'" + dir.file("f.npy") + "' is in Fortran order: write it with numpy.ascontiguousarray(arr)");
  EXPECT_EQ(error_of([&] {
              open_numpy_array(dir.write("b.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                                                      std::string(4, '\0'))),
                               {});
            }),
            "'" + dir.file("b.npy") +
                "' holds elements of type '>f4', big-endian: write it with "
                "arr.astype(arr.dtype.newbyteorder('<'))");
  EXPECT_EQ(
      error_of([&] {
        open_numpy_array(
            dir.write("t.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", std::string(8, '\0'))),
            {});
      }),
      "'" + dir.file("t.npy") + "' is truncated: its header announces (10,) float32 (40 bytes) but 8 bytes follow");
  EXPECT_EQ(error_of([&] { open_numpy_array(dir.write("n.npy", "not numpy"), {}); }),
            "'" + dir.file("n.npy") + "' is not a .npy array (no \\x93NUMPY magic): write it with numpy.save");
  EXPECT_EQ(error_of([&] { open_numpy_array(dir.write("z.npz", "not a zip at all, but long enough"), {}); }),
            "'" + dir.file("z.npz") + "' is not a .npz archive (no zip directory): write it with numpy.savez");
}

TEST(Npy, NamesTheFileOfAnArchiveMember) {
  EXPECT_TRUE(is_numpy_path("a/b.npz:x_train"));
  EXPECT_TRUE(is_numpy_path("b.npy"));
  EXPECT_FALSE(is_numpy_path("train-images-idx3-ubyte.gz"));
  EXPECT_EQ(numpy_file_of("a/b.npz:x_train"), "a/b.npz");
  EXPECT_EQ(numpy_file_of("a/b.npy"), "a/b.npy");
}

TEST(Npy, ByteAndFloatImagesFeedTheSameFloats) {
  test::TempDir dir;
  std::string floats;
  for (int i = 0; i < 12; ++i) {
    const float v = pixel_value(static_cast<uint8_t>(i * 20));
    floats.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  std::string bytes;
  for (int i = 0; i < 12; ++i) bytes += static_cast<char>(i * 20);
  const std::string labels = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                                 std::string("\x02\0\0\0\0\0\0\0\x00\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0", 24));
  const std::string y = dir.write("y.npy", labels);
  const Dataset b = load_dataset(
      "train", dir.write("b.npy", npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 2, 2), }", bytes)), y, 0,
      Shape{1, 2, 2});
  const Dataset f = load_dataset(
      "train", dir.write("f.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 1, 2, 2), }", floats)), y,
      0, Shape{1, 2, 2});
  std::vector<float> fb(12), ff(12), lb(3), lf(3);
  const std::vector<int64_t> order = {2, 0, 1};
  fill_batch(b, order, 0, 3, fb.data(), lb.data());
  fill_batch(f, order, 0, 3, ff.data(), lf.data());
  EXPECT_EQ(std::memcmp(fb.data(), ff.data(), 12 * sizeof(float)), 0);
  EXPECT_EQ(fb[0], pixel_value(160));
  EXPECT_EQ(lb, (std::vector<float>{1, 2, 0}));
  EXPECT_EQ(error_of([&] {
              load_dataset("train", dir.file("b.npy"), y, 0, Shape{1, 28, 28});
            }),
            "train data: images in " + dir.file("b.npy") +
                " are [1,2,2] per sample, but the model's input op expects [1,28,28]");
}

}  // namespace
}  // namespace devmap
