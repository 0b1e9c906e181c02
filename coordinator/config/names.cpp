#include "coordinator/config/names.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace devmap {

bool is_valid_op_name(const std::string& name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !letter(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return letter(c) || digit(c) || c == '.' || c == '-'; });
}

std::optional<DeviceName> parse_device_name(const std::string& name) {
  DeviceName out{DeviceKind::kCpu, 0};
  if (name.rfind("cpu:", 0) == 0) {
    out.kind = DeviceKind::kCpu;
  } else if (name.rfind("gpu:", 0) == 0) {
    out.kind = DeviceKind::kGpu;
  } else {
    return std::nullopt;
  }
  const char* begin = name.data() + 4;
  const char* end = name.data() + name.size();
  if (begin == end || (*begin == '0' && end - begin > 1)) return std::nullopt;
  if (*begin < '0' || *begin > '9') return std::nullopt;
  auto [ptr, ec] = std::from_chars(begin, end, out.index);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return out;
}

std::string bad_device_name_message(const std::string& name) {
  return "bad device name " + quoted(name) + " (expected cpu:N or gpu:N, e.g. cpu:0)";
}

}  // namespace devmap
