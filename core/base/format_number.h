// A number as a message shows it: what std::ostream writes for a double
// (six significant digits, no trailing zeros: "0.25", "1e+06"); a time in
// seconds as milliseconds with one decimal ("143.4 ms").
#pragma once

#include <cstdio>
#include <sstream>
#include <string>

namespace devmap {

inline std::string format_number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

inline std::string format_ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
  return buf;
}

}  // namespace devmap
