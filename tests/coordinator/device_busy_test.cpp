// DeviceBusy: busy fractions from per-step work and wait times, and the
// advice a split whose devices mostly wait gets (the text docs/CONFIG.md
// quotes).
#include "coordinator/telemetry/device_busy.h"

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

TEST(DeviceBusy, SinceAnEarlierCopyIsWhatWasAddedAfterIt) {
  DeviceBusy busy;
  busy.add_work("cpu:0", 0.030, 0.010);
  busy.add_step(0.040);
  const DeviceBusy before = busy;
  busy.add_work("cpu:0", 0.040, 0.010);  // 30 ms of work in 50 ms
  busy.add_work("cpu:1", 0.020, 0.015);  // a device first seen after the copy: 5 ms
  busy.add_step(0.050);
  const DeviceBusy epoch = busy.since(before);
  EXPECT_NEAR(epoch.wall_seconds(), 0.050, 1e-12);
  const std::vector<DeviceBusy::Share> s = epoch.shares();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(s[0].busy_seconds, 0.030, 1e-12);
  EXPECT_NEAR(s[0].fraction, 0.6, 1e-12);
  EXPECT_NEAR(s[1].fraction, 0.1, 1e-12);
  // The epoch event's fields: busy and idle fractions that add up to one.
  JsonObject line;
  add_busy_idle_fields(line, epoch);
  EXPECT_EQ(line.str(), R"({"device_busy":{"cpu:0":0.6,"cpu:1":0.1},"device_idle":{"cpu:0":0.4,"cpu:1":0.9}})");
  // --profile's lines: seconds and percentages of both.
  const std::string table = busy_table(epoch);
  EXPECT_NE(table.find("cpu:0    busy     0.030 s ( 60.0%)   idle     0.020 s ( 40.0%)"), std::string::npos) << table;
}

}  // namespace
}  // namespace devmap
