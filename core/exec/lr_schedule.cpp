#include "core/exec/lr_schedule.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>

namespace devmap {

const char* lr_schedule_kind_name(LrSchedule::Kind kind) {
  switch (kind) {
    case LrSchedule::Kind::kConstant: return "constant";
    case LrSchedule::Kind::kStep: return "step";
    case LrSchedule::Kind::kCosine: return "cosine";
  }
  return "?";
}

double learning_rate_at(double base, const LrSchedule& s, int64_t step) {
  const int64_t e = step - 1;
  if (s.warmup_steps > 0 && e < s.warmup_steps) {
    const double f = s.warmup_start_factor;
    return base * (f + (1.0 - f) * static_cast<double>(e) / static_cast<double>(s.warmup_steps));
  }
  const int64_t after = std::max<int64_t>(e - s.warmup_steps, 0);
  switch (s.kind) {
    case LrSchedule::Kind::kConstant: return base;
    case LrSchedule::Kind::kStep:
      assert(s.step_size >= 1);
      return base * std::pow(s.gamma, static_cast<double>(after / s.step_size));
    case LrSchedule::Kind::kCosine: {
      const int64_t period = s.cosine_period();
      assert(period >= 1 && "the run resolves the cosine's period before its first step");
      const double m = s.min_learning_rate;
      return m + (base - m) *
                     (1.0 + std::cos(std::numbers::pi * static_cast<double>(after) / static_cast<double>(period))) /
                     2.0;
    }
  }
  return base;
}

}  // namespace devmap
