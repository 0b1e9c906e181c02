// TensorView: a non-owning view of float32 data with a shape.
// Buffer: owned, 64-byte aligned float storage.
#pragma once

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "core/base/bytes.h"
#include "core/graph/shape.h"

namespace devmap {

struct TensorView {
  float* data = nullptr;
  Shape shape;

  int64_t numel() const { return shape.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * sizeof(float); }
  bool empty() const { return data == nullptr; }
  float& operator[](int64_t i) const { return data[i]; }
};

// Samples [first, first + count) of a view whose first dimension is the
// batch (a view without data stays without data).
inline TensorView batch_rows(const TensorView& v, int64_t first, int64_t count) {
  std::vector<int64_t> dims = v.shape.dims();
  const int64_t per_sample = dims[0] == 0 ? 0 : v.shape.numel() / dims[0];
  dims[0] = count;
  return TensorView{v.data == nullptr ? nullptr : v.data + first * per_sample, Shape(std::move(dims))};
}

// Owned, zero-initialised, 64-byte aligned float storage.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(int64_t count) { resize(count); }
  void resize(int64_t count) {
    count_ = count;
    size_t bytes = round_up_to_cache_line(static_cast<uint64_t>(count) * sizeof(float));
    data_.reset(bytes ? static_cast<float*>(std::aligned_alloc(kCacheLineBytes, bytes)) : nullptr);
    if (bytes) {
      if (!data_) throw std::bad_alloc();
      std::memset(data_.get(), 0, bytes);
    }
  }
  float* data() const { return data_.get(); }
  int64_t size() const { return count_; }
  TensorView view(Shape shape) const {
    assert(shape.numel() <= count_);
    return TensorView{data_.get(), std::move(shape)};
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t count_ = 0;
};

}  // namespace devmap
