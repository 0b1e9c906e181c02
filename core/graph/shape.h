// Shape: the dimensions of a dense row-major tensor.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace devmap {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  // This shape with a leading batch dimension of `batch`.
  Shape with_batch(int64_t batch) const {
    std::vector<int64_t> d{batch};
    d.insert(d.end(), dims_.begin(), dims_.end());
    return Shape(std::move(d));
  }
  // "[64,1,28,28]"
  std::string to_string() const {
    std::string s = "[";
    for (size_t i = 0; i < dims_.size(); ++i) s += (i ? "," : "") + std::to_string(dims_[i]);
    return s + "]";
  }
  bool operator==(const Shape&) const = default;

 private:
  std::vector<int64_t> dims_;
};

}  // namespace devmap
