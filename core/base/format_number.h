// A number as a message shows it: what std::ostream writes for a double
// (six significant digits, no trailing zeros: "0.25", "1e+06").
#pragma once

#include <sstream>
#include <string>

namespace devmap {

inline std::string format_number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

}  // namespace devmap
