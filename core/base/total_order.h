// A strict weak order on doubles that NaN cannot break: NaN sorts after
// every number (std::sort and std::stable_sort need a strict weak order; a
// NaN compared with < breaks it, and they may then write outside the range).
#pragma once

#include <cmath>

namespace devmap {

// Whether `a` sorts before `b`: a < b for numbers, NaN last.
inline bool sorts_before(double a, double b) {
  if (std::isnan(a)) return false;
  return std::isnan(b) || a < b;
}

}  // namespace devmap
