#include "coordinator/config/size.h"

#include <charconv>
#include <cmath>
#include <string>
#include <utility>

namespace devmap {
namespace {

constexpr std::pair<const char*, int64_t> kUnits[] = {
    {"TiB", int64_t{1} << 40},
    {"GiB", int64_t{1} << 30},
    {"MiB", int64_t{1} << 20},
    {"KiB", int64_t{1} << 10},
    {"B", 1},
};
constexpr int64_t kMaxBytes = int64_t{1} << 62;

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

const char* const kByteSizeUnits = "B, KiB, MiB, GiB, TiB";

std::optional<int64_t> parse_byte_size(std::string_view text) {
  int64_t multiplier = 1;
  for (const auto& [unit, scale] : kUnits) {
    std::string_view u(unit);
    if (text.size() > u.size() && text.substr(text.size() - u.size()) == u) {
      text.remove_suffix(u.size());
      multiplier = scale;
      break;
    }
  }
  // The number: digits, optionally '.' and more digits.
  const size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  if (!all_digits(whole)) return std::nullopt;
  if (dot != std::string_view::npos && !all_digits(text.substr(dot + 1))) return std::nullopt;
  if (dot == std::string_view::npos) {  // exact integer arithmetic
    int64_t count = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (ec != std::errc() || ptr != text.data() + text.size() || count > kMaxBytes / multiplier) return std::nullopt;
    return count * multiplier;
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  const double bytes = std::floor(value * static_cast<double>(multiplier));
  if (!(bytes <= static_cast<double>(kMaxBytes))) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

}  // namespace devmap
