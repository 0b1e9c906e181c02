// DeviceBusy: busy fractions from per-step work and wait times, and the
// advice a split whose devices mostly wait gets (the text docs/CONFIG.md
// quotes).
#include "coordinator/device_busy.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace devmap {
namespace {

TEST(DeviceBusy, FractionIsWorkLessWaitingOverTheStepTime) {
  DeviceBusy busy;
  busy.add_work("cpu:0", 0.034, 0.010);  // 24 ms of its own work
  busy.add_work("cpu:1", 0.030, 0.020);  // 10 ms
  busy.add_step(0.040);
  busy.add_work("cpu:0", 0.034, 0.010);
  busy.add_work("cpu:1", 0.030, 0.020);
  busy.add_step(0.040);
  const std::vector<DeviceBusy::Share> s = busy.shares();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].device, "cpu:0");
  EXPECT_NEAR(s[0].fraction, 0.6, 1e-12);
  EXPECT_NEAR(s[1].fraction, 0.25, 1e-12);
  EXPECT_EQ(busy_summary(busy), "device busy: cpu:0 60%, cpu:1 25% of the step time");
  // cpu:0 is busy most of the time: not every device idles more than half.
  EXPECT_FALSE(split_advice(busy).has_value());
}

TEST(DeviceBusy, AdviceWhenEveryDeviceOfASplitIdlesMoreThanHalf) {
  DeviceBusy busy;
  busy.add_work("cpu:0", 0.040, 0.025);
  busy.add_work("cpu:1", 0.040, 0.030);
  busy.add_step(0.040);
  ASSERT_TRUE(split_advice(busy).has_value());
  // One device alone is never told to split differently.
  DeviceBusy one;
  one.add_work("cpu:0", 0.010, 0);
  one.add_step(0.040);
  EXPECT_FALSE(split_advice(one).has_value());
  // A worker's clock can run past the coordinator's by a hair: clamped.
  DeviceBusy over;
  over.add_work("cpu:0", 0.050, 0);
  over.add_step(0.040);
  EXPECT_EQ(over.shares()[0].fraction, 1.0);

  // docs/CONFIG.md quotes the advice as printed.
  std::ifstream in(std::string(DEVMAP_SOURCE_DIR) + "/docs/CONFIG.md");
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_NE(doc.str().find("\n" + *split_advice(busy) + "\n"), std::string::npos)
      << "docs/CONFIG.md should quote: " << *split_advice(busy);
}

}  // namespace
}  // namespace devmap
