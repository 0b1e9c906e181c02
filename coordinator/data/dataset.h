// Dataset: images and labels held by the coordinator (workers open no data
// file), and the order they are visited in. The shuffle of epoch e is a
// counter-based function of (seed, e): any run with the same seed visits
// the same samples in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/shape.h"

namespace devmap {

struct Dataset {
  std::string name;  // "train", "test"
  int64_t count = 0;
  Shape sample_shape;         // [1, rows, cols]
  std::vector<float> pixels;  // count * sample_shape.numel(), in [0, 1]
  std::vector<uint8_t> labels;

  int64_t sample_numel() const { return sample_shape.numel(); }
};

// Loads an IDX image file and its label file; throws devmap::Error when they
// disagree in count or the images do not match `expected` per-sample shape.
Dataset load_dataset(const std::string& name, const std::string& images, const std::string& labels, int64_t limit,
                     const Shape& expected);

// The visiting order of epoch `epoch` (1-based): a Fisher-Yates shuffle
// driven by Philox keyed by (seed, "shuffle"), or 0..count-1 unshuffled.
std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch, bool shuffle);

// Writes samples order[first .. first+batch) into `images` (batch x
// sample_numel floats) and their labels as floats into `labels`.
void fill_batch(const Dataset& data, const std::vector<int64_t>& order, int64_t first, int64_t batch, float* images,
                float* labels);

}  // namespace devmap
