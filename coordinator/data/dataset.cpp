#include "coordinator/data/dataset.h"

#include <cstring>
#include <numeric>

#include "coordinator/data/idx_reader.h"
#include "coordinator/data/npy.h"
#include "core/base/error.h"
#include "core/base/random.h"

namespace devmap {
namespace {

int64_t kept(int64_t count, int64_t limit) {
  if (limit < 0) throw_invalid("a sample limit must be >= 0, got " + std::to_string(limit));
  return limit > 0 && limit < count ? limit : count;
}

// The images array's per-sample shape: N x C x H x W, or N x H x W as one channel.
Shape sample_shape_of(const NpyArray& a) {
  if (a.shape.size() == 4) return Shape{a.shape[1], a.shape[2], a.shape[3]};
  if (a.shape.size() == 3) return Shape{1, a.shape[1], a.shape[2]};
  throw_invalid("'" + a.where + "' holds an array of shape " + a.shape_text() +
                ": images must be N x C x H x W or N x H x W");
}

NpyArray open_images(const std::string& name, const std::string& path) {
  NpyArray a = open_numpy_array(path, {"images", "x", "x_" + name});
  if (a.type != NpyType::kU8 && a.type != NpyType::kF32)
    throw_invalid("'" + a.where + "' holds " + npy_type_name(a.type) +
                  " images: devmap reads uint8 (pixels 0-255) or float32 (as they are); convert with "
                  "arr.astype(numpy.float32)");
  sample_shape_of(a);
  return a;
}

// Label i of an integer array, checked to be a class index 0-255.
uint8_t label_at(const NpyArray& a, int64_t i) {
  const size_t width = npy_type_bytes(a.type);
  uint64_t raw = 0;
  std::memcpy(&raw, a.data + static_cast<size_t>(i) * width, width);  // little-endian, as the file is
  int64_t v = 0;
  switch (a.type) {
    case NpyType::kI8: v = static_cast<int8_t>(raw); break;
    case NpyType::kI16: v = static_cast<int16_t>(raw); break;
    case NpyType::kI32: v = static_cast<int32_t>(raw); break;
    case NpyType::kI64: v = static_cast<int64_t>(raw); break;
    default: v = raw > 255 ? 256 : static_cast<int64_t>(raw); break;
  }
  if (v < 0 || v > 255)
    throw_invalid("'" + a.where + "' label " + std::to_string(i) + " is " + std::to_string(v) +
                  ": labels are class indices 0-255");
  return static_cast<uint8_t>(v);
}

Dataset with_images(const std::string& name, const NpyArray& img, int64_t limit) {
  Dataset d;
  d.name = name;
  d.count = kept(img.shape[0], limit);
  d.sample_shape = sample_shape_of(img);
  d.float_pixels = img.type == NpyType::kF32;
  d.pixels = SampleFile(img.fd, img.file_offset, static_cast<uint64_t>(d.sample_numel()) * npy_type_bytes(img.type),
                        "'" + img.where + "'");
  return d;
}

void check_shape(const Dataset& d, const std::string& images, const Shape& expected) {
  if (d.sample_shape != expected)
    throw_invalid(d.name + " data: images in " + images + " are " + d.sample_shape.to_string() +
                  " per sample, but the model's input op expects " + expected.to_string());
}

Dataset load_numpy_dataset(const std::string& name, const std::string& images, const std::string& labels,
                           int64_t limit) {
  const NpyArray img = open_images(name, images);
  const NpyArray lab = open_numpy_array(labels, {"labels", "y", "y_" + name});
  if (!npy_type_is_integer(lab.type))
    throw_invalid("'" + lab.where + "' holds " + npy_type_name(lab.type) +
                  " labels: labels are integers (convert with arr.astype(numpy.int64))");
  if (lab.shape.size() != 1)
    throw_invalid("'" + lab.where + "' holds an array of shape " + lab.shape_text() +
                  ": labels must be one integer a sample, shape (N,)");
  if (img.shape[0] != lab.shape[0])
    throw_invalid("'" + img.where + "' holds " + std::to_string(img.shape[0]) + " images but '" + lab.where +
                  "' holds " + std::to_string(lab.shape[0]) + " labels: they must come in pairs");
  Dataset d = with_images(name, img, limit);
  d.labels.resize(static_cast<size_t>(d.count));
  for (int64_t i = 0; i < d.count; ++i) d.labels[static_cast<size_t>(i)] = label_at(lab, i);
  return d;
}

Dataset load_idx(const std::string& name, const std::string& images, const std::string& labels, int64_t limit) {
  const std::shared_ptr<FileDescriptor> scratch = scratch_file("'" + images + "'");
  const ImageSet set = copy_idx_images(images, limit, scratch->get());
  Dataset d;
  d.name = name;
  d.count = set.count;
  d.sample_shape = Shape{1, set.rows, set.cols};
  d.pixels = SampleFile(scratch, 0, static_cast<uint64_t>(set.rows * set.cols), "the copy of '" + images + "'");
  d.labels = load_idx_labels(labels, limit);
  if (d.count != static_cast<int64_t>(d.labels.size()))
    throw_invalid("'" + images + "' holds " + std::to_string(d.count) + " images but '" + labels + "' holds " +
                  std::to_string(d.labels.size()) + " labels: they must come in pairs");
  return d;
}

}  // namespace

Dataset load_dataset(const std::string& name, const std::string& images, const std::string& labels, int64_t limit,
                     const Shape& expected) {
  Dataset d = is_numpy_path(images) || is_numpy_path(labels) ? load_numpy_dataset(name, images, labels, limit)
                                                             : load_idx(name, images, labels, limit);
  check_shape(d, images, expected);
  return d;
}

Dataset load_numpy_images(const std::string& images, const Shape& expected) {
  Dataset d = with_images("input", open_images("input", images), 0);
  check_shape(d, images, expected);
  return d;
}

void sample_pixels(const Dataset& data, int64_t s, float* out) {
  const int64_t n = data.sample_numel();
  if (data.float_pixels) {
    data.pixels.read(s, reinterpret_cast<uint8_t*>(out));  // little-endian float32, as the file holds it
    return;
  }
  // The bytes go where the floats will, at the end: converting from the
  // front never overwrites a byte not yet read.
  uint8_t* in = reinterpret_cast<uint8_t*>(out) + 3 * n;
  data.pixels.read(s, in);
  for (int64_t i = 0; i < n; ++i) out[i] = pixel_value(in[i]);
}

uint64_t dataset_bytes(const std::string& name, const std::string& images, int64_t limit) {
  const int64_t count = is_numpy_path(images) ? open_images(name, images).shape[0] : IdxImageReader(images).count();
  return static_cast<uint64_t>(kept(count, limit)) * (1 + sizeof(int64_t));
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
    const int64_t s = order[static_cast<size_t>(first + b)];
    sample_pixels(data, s, images + b * n);
    labels[b] = static_cast<float>(data.labels[static_cast<size_t>(s)]);
  }
}

}  // namespace devmap
