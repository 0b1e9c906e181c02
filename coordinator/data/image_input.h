// The images a predict job runs on: an IDX image file (gzip or plain, like
// the data sets), a NumPy array (FILE.npy, FILE.npz, FILE.npz:KEY; uint8 or
// float32, N x C x H x W or N x H x W) or a CSV of pixel rows (0-255, one
// image per row, with or without a header line, as Kaggle's
// digit-recognizer test.csv). They are read as they are fed, a batch at a
// time (a NumPy file is mapped), so the coordinator's memory does not grow
// with the input's length.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/data/dataset.h"
#include "coordinator/data/idx_reader.h"
#include "core/graph/shape.h"

namespace devmap {

class PredictionInput {
 public:
  // Opens `path` (NumPy by its extension .npy or .npz; else IDX or CSV by
  // its first bytes) and counts its images: a NumPy or IDX header says how
  // many; a CSV file is read through once, checking every row, so a bad row
  // fails before anything starts. Each
  // sample must have the `expected` shape. Throws devmap::Error
  // (kInvalidInput) naming the file (and line) for what is wrong.
  PredictionInput(const std::string& path, const Shape& expected);
  ~PredictionInput();

  int64_t count() const { return count_; }
  // BatchFeeder's source: images [first, first + n) as floats (byte / 255)
  // into `images`, and 0 into `labels`. Batches come in order.
  void fill(int64_t first, int64_t n, float* images, float* labels);
  // Bytes the reader holds while it reads a batch of `batch` images.
  static uint64_t buffer_bytes(const Shape& sample, int64_t batch);

 private:
  std::string path_;
  int64_t count_ = 0, width_ = 0, next_ = 0;
  std::unique_ptr<IdxImageReader> idx_;
  std::unique_ptr<Dataset> numpy_;
  std::unique_ptr<std::ifstream> csv_;
  int64_t csv_line_ = 0;
};

}  // namespace devmap
