// Readers for MNIST-format IDX files (gzip-compressed or plain), as Debian's
// dataset-fashion-mnist ships them: a big-endian header (magic, counts)
// followed by uint8 data.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace devmap {

// A pixel byte as the model sees it: byte / 255, in [0, 1]. Every reader
// of byte images converts with this one function.
inline float pixel_value(uint8_t byte) {
  return static_cast<float>(byte) / 255.0f;
}

struct ImageSet {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> bytes;  // count*rows*cols, row-major per image, as in the file (pixel_value converts)
};

// Reads an image file (magic 0x00000803: count, rows, cols, then pixels).
// limit > 0 reads only the first `limit` images. Throws devmap::Error
// (kInvalidInput) naming the path for a missing or unreadable file, a wrong
// magic number, a truncated file, or (when the whole file is read) bytes
// beyond what the header announces.
ImageSet load_idx_images(const std::string& path, int64_t limit = 0);

// The images of an IDX image file read in order, a few at a time, so that
// memory does not grow with the file: the header is read and checked when it
// opens, read() converts the next images, and reading the last one checks
// that nothing follows. Errors are those of load_idx_images, found as the
// reading gets there.
class IdxImageReader {
 public:
  explicit IdxImageReader(const std::string& path);
  ~IdxImageReader();
  IdxImageReader(const IdxImageReader&) = delete;
  IdxImageReader& operator=(const IdxImageReader&) = delete;

  int64_t count() const { return count_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // The next `n` images as rows*cols floats each, byte / 255.
  void read(int64_t n, float* out);

 private:
  struct File;
  std::unique_ptr<File> file_;
  int64_t count_ = 0, rows_ = 0, cols_ = 0, next_ = 0;
  std::vector<uint8_t> bytes_;  // one read's worth
};

// Copies the first `limit` images (0: all) of an image file, as bytes,
// to the end of `out` (a scratch file, sample_file.h), a chunk at a time;
// returns their count and size (`bytes` empty). Same checks and errors as
// load_idx_images.
ImageSet copy_idx_images(const std::string& path, int64_t limit, int out);

// Reads a label file (magic 0x00000801: count, then one byte per label).
// Same limit and errors as load_idx_images.
std::vector<uint8_t> load_idx_labels(const std::string& path, int64_t limit = 0);

// An image file and its label file, checked to hold the same number of
// samples (after `limit`).
struct LabeledImages {
  ImageSet images;
  std::vector<uint8_t> labels;
};
LabeledImages load_idx_dataset(const std::string& images_path, const std::string& labels_path, int64_t limit = 0);

}  // namespace devmap
