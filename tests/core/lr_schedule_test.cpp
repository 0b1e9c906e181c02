// learning_rate_at against the rates PyTorch 1.13 gives (torch.optim.SGD
// with lr 0.1, the param group's lr read before each optimizer.step(),
// scheduler.step() after it; a warm-up is LinearLR chained by
// SequentialLR(milestones=[warmup_steps]) before the main scheduler), and
// the properties resume relies on.
#include "core/exec/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace devmap {
namespace {

void expect_rates(const LrSchedule& s, const std::vector<double>& torch) {
  for (size_t i = 0; i < torch.size(); ++i) {
    const int64_t step = static_cast<int64_t>(i) + 1;
    EXPECT_NEAR(learning_rate_at(0.1, s, step), torch[i], 1e-15) << "step " << step;
  }
}

LrSchedule step_schedule(int64_t warmup, double start) {
  LrSchedule s;
  s.kind = LrSchedule::Kind::kStep;
  s.step_size = 3;
  s.gamma = 0.1;
  s.warmup_steps = warmup;
  s.warmup_start_factor = start;
  return s;
}

TEST(LrSchedule, StepMatchesStepLR) {
  expect_rates(step_schedule(0, 1.0 / 3.0),
               {0.1, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.0010000000000000002,
                0.0010000000000000002, 0.0010000000000000002, 0.00010000000000000003});
}

TEST(LrSchedule, WarmupThenStepMatchesSequentialLR) {
  expect_rates(step_schedule(2, 0.5),
               {0.05, 0.07500000000000001, 0.1, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002,
                0.010000000000000002, 0.0010000000000000002, 0.0010000000000000002});
}

TEST(LrSchedule, CosineMatchesCosineAnnealingLRAndRisesPastItsPeriod) {
  LrSchedule s;
  s.kind = LrSchedule::Kind::kCosine;
  s.cosine_steps = 6;
  s.min_learning_rate = 0.001;
  expect_rates(s, {0.1, 0.09336825748732973, 0.07525000000000001, 0.0505, 0.025750000000000012, 0.007631742512670284,
                   0.001, 0.007631742512670284, 0.025750000000000002, 0.05050000000000004});
}

TEST(LrSchedule, WarmupThenCosineOverTheRunsRemainingSteps) {
  LrSchedule s;
  s.kind = LrSchedule::Kind::kCosine;
  s.warmup_steps = 4;
  s.total_steps = 10;  // T_max = 10 - 4 = 6, as CosineAnnealingLR(T_max=6) after 4 warm-up steps
  EXPECT_EQ(s.cosine_period(), 6);
  expect_rates(s, {0.03333333333333333, 0.05, 0.06666666666666668, 0.08333333333333334, 0.1, 0.09330127018922195,
                   0.07500000000000001, 0.05, 0.025000000000000012, 0.006698729810778065, 0.0, 0.006698729810778065});
}

TEST(LrSchedule, WarmupThenConstant) {
  LrSchedule s;
  s.warmup_steps = 3;
  s.warmup_start_factor = 0.25;
  expect_rates(s, {0.025, 0.05, 0.07500000000000001, 0.1, 0.1, 0.1});
}

TEST(LrSchedule, ConstantIsExactlyTheBaseRate) {
  const LrSchedule s;
  for (int64_t step : {1, 2, 1000, 1000000}) EXPECT_EQ(learning_rate_at(0.0123, s, step), 0.0123);
}

TEST(LrSchedule, KindNames) {
  EXPECT_STREQ(lr_schedule_kind_name(LrSchedule::Kind::kConstant), "constant");
  EXPECT_STREQ(lr_schedule_kind_name(LrSchedule::Kind::kStep), "step");
  EXPECT_STREQ(lr_schedule_kind_name(LrSchedule::Kind::kCosine), "cosine");
}

}  // namespace
}  // namespace devmap
