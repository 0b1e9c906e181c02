#include "coordinator/data/dataset.h"

#include <cstring>
#include <numeric>

#include "coordinator/data/idx_reader.h"
#include "core/base/error.h"
#include "core/base/random.h"

namespace devmap {

Dataset load_dataset(const std::string& name, const std::string& images, const std::string& labels, int64_t limit,
                     const Shape& expected) {
  LabeledImages pair = load_idx_dataset(images, labels, limit);  // checks the counts agree
  ImageSet& img = pair.images;
  Dataset d;
  d.name = name;
  d.labels = std::move(pair.labels);
  d.count = img.count;
  d.sample_shape = Shape{1, img.rows, img.cols};
  if (d.sample_shape != expected)
    throw_invalid(name + " data: images in " + images + " are " + d.sample_shape.to_string() +
                  " per sample, but the model's input op expects " + expected.to_string());
  d.pixels = std::move(img.pixels);
  return d;
}

std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  PhiloxKey key = philox_key(seed, "shuffle");
  for (int64_t i = count - 1; i > 0; --i) {
    // Counter (i, epoch): one 32-bit word per swap, scaled without modulo bias worth noting at these sizes.
    auto w = philox4x32(key, {static_cast<uint32_t>(i), static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32),
                              static_cast<uint32_t>(epoch), 0x5u});
    auto j = static_cast<int64_t>((static_cast<uint64_t>(w[0]) * static_cast<uint64_t>(i + 1)) >> 32);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

void fill_batch(const Dataset& data, const std::vector<int64_t>& order, int64_t first, int64_t batch, float* images,
                float* labels) {
  const int64_t n = data.sample_numel();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t s = order[static_cast<size_t>(first + b)];
    std::memcpy(images + b * n, data.pixels.data() + s * n, static_cast<size_t>(n) * sizeof(float));
    labels[b] = static_cast<float>(data.labels[static_cast<size_t>(s)]);
  }
}

}  // namespace devmap
