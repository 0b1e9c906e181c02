// Learning-rate schedules: the rate of each update as a pure function of
// the global step, so a resumed run gets the rates of an uninterrupted one
// and every worker computes the same rate without being told. The
// definitions are PyTorch's (torch.optim.lr_scheduler), with
// scheduler.step() after every optimizer.step(): a LinearLR warm-up chained
// by SequentialLR(milestones=[warmup_steps]) before ConstantLR(factor=1),
// StepLR or CosineAnnealingLR; docs/CONFIG.md writes out the formulas.
#pragma once

#include <cstdint>

namespace devmap {

struct LrSchedule {
  enum class Kind { kConstant, kStep, kCosine } kind = Kind::kConstant;
  int64_t warmup_steps = 0;                // LinearLR total_iters; 0: no warm-up
  double warmup_start_factor = 1.0 / 3.0;  // LinearLR start_factor, in (0, 1]
  int64_t step_size = 1;                   // kStep: StepLR step_size (>= 1)
  double gamma = 0.1;                      // kStep: StepLR gamma
  double min_learning_rate = 0.0;          // kCosine: CosineAnnealingLR eta_min
  int64_t cosine_steps = 0;                // kCosine: T_max; 0 = total_steps - warmup_steps
  int64_t total_steps = 0;                 // the run's updates, set when it starts (kCosine with cosine_steps 0)

  // T_max of the cosine: cosine_steps, or the run's steps after the warm-up.
  int64_t cosine_period() const { return cosine_steps > 0 ? cosine_steps : total_steps - warmup_steps; }
};

const char* lr_schedule_kind_name(LrSchedule::Kind kind);

// The rate of update `step` (1-based, global: the first update of a run is
// step 1, a resumed run continues the count). With e = step - 1 and
// W = warmup_steps:
//   e < W:  base (f + (1 - f) e / W), f = warmup_start_factor
//   else, with e' = e - W:
//     constant: base
//     step:     base gamma^floor(e' / step_size)
//     cosine:   m + (base - m) (1 + cos(pi e' / T)) / 2, m = min_learning_rate,
//               T = cosine_period() (past T it rises again, as PyTorch's does)
double learning_rate_at(double base, const LrSchedule& schedule, int64_t step);

}  // namespace devmap
