// A finite-difference gradient checker for the kernel tests. It reports a
// result and never calls EXPECT itself, so a test can also assert that a
// deliberately wrong gradient FAILS the check.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace devmap::test {

struct GradCheckOptions {
  double eps = 1e-2;        // central-difference step (the input is float)
  double tolerance = 1e-2;  // largest accepted error (see GradCheckResult)
  // Errors are relative to max(|analytic|, |numeric|, floor) with floor =
  // max(abs_floor, floor_fraction * the largest gradient magnitude), so tiny
  // gradients are judged against the tensor's scale, not their own.
  double floor_fraction = 0.05;
  double abs_floor = 1e-6;
};

struct GradCheckResult {
  bool passed = true;
  double max_error = 0.0;                // the largest per-element error
  int64_t worst_index = -1;              // where it is
  double analytic = 0.0, numeric = 0.0;  // the two gradients there
  int64_t checked = 0;                   // elements compared

  std::string summary() const {
    std::ostringstream s;
    s << (passed ? "passed" : "FAILED") << ": max error " << max_error << " at element " << worst_index << " (analytic "
      << analytic << ", numeric " << numeric << ") over " << checked << " elements";
    return s.str();
  }
};

// Compares `analytic` (dL/dx for every element of x) with central differences
// (L(x+eps) - L(x-eps)) / (2 eps) of `loss`, which must read x and return L in
// double. Each element of x is restored (bit for bit) after it is perturbed.
inline GradCheckResult check_gradient(std::span<float> x, std::span<const float> analytic,
                                      const std::function<double()>& loss, const GradCheckOptions& options = {}) {
  std::vector<double> numeric(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    const float plus = static_cast<float>(saved + options.eps), minus = static_cast<float>(saved - options.eps);
    x[i] = plus;
    const double l_plus = loss();
    x[i] = minus;
    const double l_minus = loss();
    x[i] = saved;
    numeric[i] = (l_plus - l_minus) / (static_cast<double>(plus) - static_cast<double>(minus));
  }
  double scale = 0.0;
  for (size_t i = 0; i < x.size(); ++i)
    scale = std::max({scale, std::abs(numeric[i]), std::abs(static_cast<double>(analytic[i]))});
  const double floor = std::max(options.abs_floor, options.floor_fraction * scale);

  GradCheckResult r;
  r.checked = static_cast<int64_t>(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = analytic[i], n = numeric[i];
    const double err = std::abs(a - n) / std::max({std::abs(a), std::abs(n), floor});
    // A NaN error is kept as the worst (it fails the check).
    if (r.worst_index < 0 || (!std::isnan(r.max_error) && !(err <= r.max_error))) {
      r.max_error = err;
      r.worst_index = static_cast<int64_t>(i);
      r.analytic = a;
      r.numeric = n;
    }
  }
  r.passed = r.checked > 0 && r.max_error <= options.tolerance;
  return r;
}

}  // namespace devmap::test
