// train.optimizer.schedule: read from the file and from --set, each type's
// keys and defaults (PyTorch's), and mistakes named with the keys that do
// apply. (The bad-config table holds the located messages.)
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;
using test::kMinimalModel;

TEST(ConfigSchedule, DefaultIsConstantWithoutWarmup) {
  const Config c = load_config_text(kMinimalModel, "c.yaml");
  EXPECT_EQ(c.train.optimizer.schedule.kind, LrSchedule::Kind::kConstant);
  EXPECT_EQ(c.train.optimizer.schedule.warmup_steps, 0);
  EXPECT_EQ(c.train.optimizer.rate_at(1), c.train.optimizer.learning_rate);
}

TEST(ConfigSchedule, ReadsEveryKeyOfItsType) {
  const Config step = load_config_text(
      "train: {optimizer: {type: momentum, learning_rate: 0.1, schedule: {type: step, step_size: 30, gamma: 0.5, "
      "warmup_steps: 10, warmup_start_factor: 0.1}}}\n" +
          kMinimalModel,
      "c.yaml");
  const LrSchedule& s = step.train.optimizer.schedule;
  EXPECT_EQ(s.kind, LrSchedule::Kind::kStep);
  EXPECT_EQ(s.step_size, 30);
  EXPECT_EQ(s.gamma, 0.5);
  EXPECT_EQ(s.warmup_steps, 10);
  EXPECT_EQ(s.warmup_start_factor, 0.1);

  const Config cosine = load_config_text(
      "train: {optimizer: {schedule: {type: cosine, min_learning_rate: 0.001, steps: 500}}}\n" + kMinimalModel,
      "c.yaml");
  EXPECT_EQ(cosine.train.optimizer.schedule.kind, LrSchedule::Kind::kCosine);
  EXPECT_EQ(cosine.train.optimizer.schedule.min_learning_rate, 0.001);
  EXPECT_EQ(cosine.train.optimizer.schedule.cosine_steps, 500);
  EXPECT_EQ(cosine.train.optimizer.schedule.warmup_start_factor, 1.0 / 3.0);  // LinearLR's default
}

TEST(ConfigSchedule, SetCreatesAndChangesIt) {
  const Config c = load_config_text(
      kMinimalModel, "c.yaml", {"train.optimizer.schedule.type=cosine", "train.optimizer.schedule.warmup_steps=7"});
  EXPECT_EQ(c.train.optimizer.schedule.kind, LrSchedule::Kind::kCosine);
  EXPECT_EQ(c.train.optimizer.schedule.warmup_steps, 7);
}

TEST(ConfigSchedule, SetNamesTheKeysThatApply) {
  EXPECT_EQ(error_of([] { load_config_text(kMinimalModel, "c.yaml", {"train.optimizer.schedule.warmup=5"}); }),
            "--set train.optimizer.schedule.warmup=5: unknown key 'warmup' in train.optimizer.schedule (valid: type, "
            "warmup_steps, warmup_start_factor, step_size, gamma, min_learning_rate, steps)");
  EXPECT_EQ(error_of([] {
              load_config_text(kMinimalModel, "c.yaml",
                               {"train.optimizer.schedule.type=step", "train.optimizer.schedule.step_size=0"});
            }),
            "--set train.optimizer.schedule.step_size=0: train.optimizer.schedule.step_size must be >= 1, got 0");
}

}  // namespace
}  // namespace devmap
