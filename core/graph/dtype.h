// Element types. float32 is the only one computed with today; labels and
// pixels are converted to it when a batch is filled.
#pragma once

#include <cstddef>

namespace devmap {

enum class DType { kF32 };

constexpr size_t dtype_size(DType t) {
  return t == DType::kF32 ? 4 : 0;
}
constexpr const char* dtype_name(DType t) {
  return t == DType::kF32 ? "float32" : "?";
}

}  // namespace devmap
