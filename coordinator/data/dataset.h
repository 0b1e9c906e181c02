// Dataset: images and labels held by the coordinator (workers open no data
// file), and the order they are visited in. The shuffle of epoch e is a
// counter-based function of (seed, e): any run with the same seed visits
// the same samples in the same order.
//
// Images stay in their file's element type (a byte a pixel for IDX files
// and uint8 arrays) and are read by index a batch at a time (SampleFile):
// the coordinator's memory holds the labels and a batch, not the images. A
// .npy file or a stored .npz member is read where it is; a gzip IDX file
// or a compressed .npz member is inflated once into a scratch file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/data/sample_file.h"
#include "core/graph/shape.h"

namespace devmap {

struct Dataset {
  std::string name;  // "train", "test"
  int64_t count = 0;
  Shape sample_shape;  // [channels, rows, cols]
  // count samples of sample_numel() pixels: bytes fed as byte / 255
  // (pixel_value), or float32 values fed as they are (float_pixels).
  bool float_pixels = false;
  SampleFile pixels;
  std::vector<uint8_t> labels;

  int64_t sample_numel() const { return sample_shape.numel(); }
};

// The image and label files of a data set: IDX files (gzip or plain), or
// NumPy arrays (FILE.npy, FILE.npz, FILE.npz:KEY; images N x C x H x W or
// N x H x W, uint8 or float32; labels N integers 0-255; an .npz member
// found by KEY, else as `images`/`x`/`x_<name>` and `labels`/`y`/`y_<name>`).
// limit > 0 keeps the first `limit` samples. Throws devmap::Error
// (kInvalidInput) when they disagree in count, the images do not match
// `expected` per-sample shape, or a file is not what it should be.
Dataset load_dataset(const std::string& name, const std::string& images, const std::string& labels, int64_t limit,
                     const Shape& expected);

// The images of a NumPy file alone, without labels (a prediction's input):
// FILE.npy, FILE.npz (member `images` or `x`, or its only one) or
// FILE.npz:KEY; errors as load_dataset's.
Dataset load_numpy_images(const std::string& images, const Shape& expected);

// Sample `s`'s pixels as the model sees them: sample_numel() floats into `out`.
void sample_pixels(const Dataset& data, int64_t s, float* out);

// The bytes the data set `name` ("train", "test") of `images` (at most
// `limit` samples, 0: all) keeps in memory once opened: a byte of label
// and 8 of visiting order a sample (its images stay in the file), from
// the file's header.
uint64_t dataset_bytes(const std::string& name, const std::string& images, int64_t limit);

// The visiting order of epoch `epoch` (1-based): a Fisher-Yates shuffle
// driven by Philox keyed by (seed, "shuffle"), or 0..count-1 unshuffled.
std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch, bool shuffle);

// Writes samples order[first .. first+batch) into `images` (batch x
// sample_numel floats) and their labels as floats into `labels`.
void fill_batch(const Dataset& data, const std::vector<int64_t>& order, int64_t first, int64_t batch, float* images,
                float* labels);

}  // namespace devmap
