// Byte-level helpers. round_up_to_cache_line: the size every buffer,
// ring slot and staging area is rounded to, so each starts on a cache line.
// ByteWriter / ByteReader: little-endian encoding of plain values and
// length-prefixed strings, for messages between processes. The reader
// checks every length against what is left and throws devmap::Error
// (kRuntime) on malformed input: it never reads past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/base/error.h"

namespace devmap {

inline constexpr uint64_t kCacheLineBytes = 64;

// `bytes` rounded up to a whole number of cache lines.
inline constexpr uint64_t round_up_to_cache_line(uint64_t bytes) {
  return (bytes + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes;
}

class ByteWriter {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_string(std::string_view s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    buf_.append(s);
  }
  const std::string& bytes() const { return buf_; }

 private:
  std::string buf_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_string() {
    uint32_t n = get<uint32_t>();
    need(n);
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  // A count of items that each take at least `min_item_bytes`; bounded by
  // what is left so a corrupt count cannot make the caller allocate wildly.
  uint32_t get_count(size_t min_item_bytes) {
    uint32_t n = get<uint32_t>();
    need(static_cast<size_t>(n) * min_item_bytes);
    return n;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  void need(size_t n) const {
    if (n > bytes_.size() - pos_)
      throw_runtime("malformed message: needs " + std::to_string(n) + " more bytes at offset " + std::to_string(pos_) +
                    " of " + std::to_string(bytes_.size()));
  }
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace devmap
