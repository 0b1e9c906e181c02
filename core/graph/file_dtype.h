// How a tensor is stored in a weights file. In memory every parameter and
// state tensor is float32; kI64 marks integer counts that PyTorch keeps as
// int64 (batch_norm's num_batches_tracked). They are converted when the
// file is written and read, and a float32 holds them exactly up to 2^24.
#pragma once

#include <cstdint>

namespace devmap {

enum class FileDtype : uint8_t { kF32 = 0, kI64 = 1 };

constexpr const char* file_dtype_name(FileDtype d) {
  return d == FileDtype::kI64 ? "I64" : "F32";
}
constexpr uint64_t file_dtype_bytes(FileDtype d) {
  return d == FileDtype::kI64 ? 8 : 4;
}

// The largest count a float32 state tensor holds exactly (2^24).
constexpr int64_t kLargestExactCount = int64_t{1} << 24;

}  // namespace devmap
