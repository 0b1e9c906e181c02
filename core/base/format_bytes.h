// Byte counts for people: "512 B", "12.0 KiB", "1.50 MiB", "2.00 GiB".
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>

namespace devmap {

inline std::string format_bytes(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else if (bytes < (uint64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else if (bytes < (uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024.0));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// "parameters 12.25 MiB, gradients 12.25 MiB": the named parts that are not
// zero, in order.
inline std::string format_byte_parts(std::initializer_list<std::pair<const char*, uint64_t>> parts) {
  std::string s;
  for (const auto& [what, bytes] : parts)
    if (bytes) s += (s.empty() ? "" : ", ") + std::string(what) + " " + format_bytes(bytes);
  return s;
}

}  // namespace devmap
