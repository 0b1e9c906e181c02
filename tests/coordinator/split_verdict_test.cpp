// The verdict's wording and branches (coordinator/plan/split_verdict.h),
// from inputs made by hand: no processes, no calibration cache.
#include "coordinator/plan/split_verdict.h"

#include <gtest/gtest.h>

namespace devmap {
namespace {

// A split over cpu:0 and cpu:1 (1 thread each), 1f1b, 4 micro-batches of
// 16, everything calibrated, the figures.
SplitVerdictInputs pipelined() {
  SplitVerdictInputs in;
  in.config_path = "configs/split.yaml";
  in.command = "devmap";
  in.devices = {"cpu:0", "cpu:1"};
  in.schedule = "1f1b";
  in.micro_batches = 4;
  in.micro_batch = 16;
  in.batch = 64;
  in.split_threads = 2;
  in.predicted = 0.0722;
  in.predicted_calibrated = true;
  in.alone = SingleDevice{"cpu:0", false, 2, 1, 0.0811, true, 1};
  in.lockstep = 0.0864;
  in.lockstep_calibrated = true;
  in.op_share = 0.78;
  in.slow_ops = {{"conv2", 0.61}};
  in.op_speeds_calibrated = true;
  return in;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

bool has_line(const std::vector<std::string>& lines, const std::string& start) {
  for (const std::string& l : lines)
    if (l.rfind(start, 0) == 0) return true;
  return false;
}

TEST(SplitVerdict, MeasuredSlowerThanTheFastestDeviceAloneSaysByHowMuchAndWhatToTry) {
  SplitVerdictInputs in = pipelined();
  in.measured = 0.1063;
  const std::vector<std::string> lines = split_verdict_lines(in);
  const std::string text = joined(lines);
  EXPECT_EQ(lines.front(),
            "split (1f1b, 4 x 16): 106.3 ms a step measured, 1.31x slower than cpu:0 alone with 2 threads (81.1 ms "
            "predicted, calibrated; predicted against predicted: 1.12x faster)")
      << text;
  EXPECT_TRUE(has_line(lines,
                       "  against lock-step at the full batch (1 x 64): 1.23x slower (86.4 ms predicted, "
                       "calibrated; predicted against predicted: 1.20x faster)"))
      << text;
  EXPECT_TRUE(
      has_line(lines, "  micro-batches of 16 run the ops at 78% of their speed at 64; conv2 at 61% (calibrated)"))
      << text;
  EXPECT_TRUE(has_line(lines,
                       "  to try: every op on cpu:0 (`device_map.default: cpu:0` and nothing placed elsewhere) "
                       "with threads: 2, the split's threads together; or `device_map.default: auto`"))
      << text;
  // 47% off: says so, and how to recalibrate.
  EXPECT_TRUE(has_line(lines,
                       "  measured 106.3 ms is 47% above the predicted 72.2 ms: the calibration does not "
                       "describe this run"))
      << text;
  EXPECT_NE(text.find("`devmap calibrate configs/split.yaml --force`"), std::string::npos) << text;
  // cpu:0 was predicted at the split's 2 threads: no note on threads.
  EXPECT_EQ(text.find("predicted at its own"), std::string::npos) << text;
}

TEST(SplitVerdict, APredictionFasterThanEveryAlternativeSaysNothingIsFaster) {
  const std::vector<std::string> lines = split_verdict_lines(pipelined());
  const std::string text = joined(lines);
  EXPECT_EQ(lines.front(),
            "split (1f1b, 4 x 16): 72.2 ms a step predicted (calibrated), 1.12x faster than cpu:0 alone with 2 "
            "threads (81.1 ms predicted, calibrated)")
      << text;
  EXPECT_TRUE(has_line(lines,
                       "  against lock-step at the full batch (1 x 64): 1.20x faster (86.4 ms predicted, "
                       "calibrated)"))
      << text;
  EXPECT_TRUE(has_line(lines, "  nothing above is predicted faster than this")) << text;
  EXPECT_EQ(text.find("to try"), std::string::npos) << text;
  EXPECT_EQ(text.find("measured"), std::string::npos) << text;
}

TEST(SplitVerdict, MeasuredWithinTwentyPercentOfThePredictionSaysNothingAboutTheCalibration) {
  SplitVerdictInputs in = pipelined();
  in.measured = 0.0722 * 1.19;
  const std::string text = joined(split_verdict_lines(in));
  EXPECT_EQ(text.find("above the predicted"), std::string::npos) << text;
  EXPECT_EQ(text.find("predicted against predicted"), std::string::npos) << text;
  in.measured = 0.0722 * 0.75;
  EXPECT_NE(joined(split_verdict_lines(in)).find("is 25% below the predicted 72.2 ms"), std::string::npos);
}

TEST(SplitVerdict, LockStepFasterThanTheMicroBatchesSuggestsFewer) {
  SplitVerdictInputs in = pipelined();
  in.alone = SingleDevice{"cpu:0", false, 2, 1, 0.0950, true, 1};
  in.lockstep = 0.0650;
  const std::vector<std::string> lines = split_verdict_lines(in);
  EXPECT_TRUE(has_line(lines,
                       "  to try: `train.pipeline.micro_batches: 1`, lock-step at the full batch, where conv2 "
                       "runs at full speed; or `micro_batches: auto`"))
      << joined(lines);
}

TEST(SplitVerdict, AloneAtItsOwnThreadsSaysSoAndHowToMeasureTheSplitsThreads) {
  SplitVerdictInputs in = pipelined();
  in.alone = SingleDevice{"cpu:0", false, 1, 1, 0.0900, true, 1};
  in.measured = 0.0750;
  const std::vector<std::string> lines = split_verdict_lines(in);
  const std::string text = joined(lines);
  EXPECT_NE(lines.front().find("1.20x faster than cpu:0 alone with 1 thread (90.0 ms predicted, calibrated)"),
            std::string::npos)
      << text;
  EXPECT_TRUE(has_line(lines,
                       "  cpu:0 alone is predicted at its own 1 thread: the calibration cache has no cpu:0 "
                       "with 2 threads, the split's together (`devmap calibrate configs/split.yaml --set "
                       "devices.cpu:0.threads=2` measures it)"))
      << text;
}

TEST(SplitVerdict, EstimatedFiguresAreLabelledAndNameTheCalibration) {
  SplitVerdictInputs in = pipelined();
  in.predicted_calibrated = false;
  in.alone->calibrated = false;
  in.op_speeds_calibrated = false;
  const std::vector<std::string> lines = split_verdict_lines(in);
  const std::string text = joined(lines);
  EXPECT_NE(lines.front().find("72.2 ms a step predicted (estimated)"), std::string::npos) << text;
  EXPECT_NE(lines.front().find("(81.1 ms predicted, estimated)"), std::string::npos) << text;
  EXPECT_NE(text.find("conv2 at 61% (estimated)"), std::string::npos) << text;
  EXPECT_TRUE(has_line(lines,
                       "  predicted from FLOPs estimates, not measured: run `devmap calibrate "
                       "configs/split.yaml` for calibrated figures"))
      << text;
}

TEST(SplitVerdict, NoSingleDeviceFitsSaysWhy) {
  SplitVerdictInputs in = pipelined();
  in.alone.reset();
  in.no_fit = {{"cpu:0", "needs 80.0 MiB at one sample but its memory_limit is 64.0 MiB"},
               {"cpu:1", "needs 80.0 MiB at one sample but its memory_limit is 48.0 MiB"}};
  const std::vector<std::string> lines = split_verdict_lines(in);
  EXPECT_EQ(lines.front(), "split (1f1b, 4 x 16): 72.2 ms a step predicted (calibrated)") << joined(lines);
  EXPECT_TRUE(has_line(lines,
                       "  no single device fits: cpu:0 alone needs 80.0 MiB at one sample but its "
                       "memory_limit is 64.0 MiB; cpu:1 alone needs"))
      << joined(lines);
}

TEST(SplitVerdict, ADeviceAloneThatNeedsMicroBatchesSaysSo) {
  SplitVerdictInputs in = pipelined();
  in.alone = SingleDevice{"cpu:1", false, 1, 1, 0.1430, true, 22};
  const std::vector<std::string> lines = split_verdict_lines(in);
  EXPECT_NE(lines.front().find("1.98x faster than cpu:1 alone with 1 thread (143.0 ms predicted, calibrated; as 22 "
                               "micro-batches to fit its memory_limit)"),
            std::string::npos)
      << joined(lines);
}

TEST(SplitVerdict, LockStepSplitOfOneBatchHasNoMicroBatchLine) {
  SplitVerdictInputs in = pipelined();
  in.schedule = "lock-step";
  in.micro_batches = 1;
  in.micro_batch = 64;
  in.lockstep.reset();
  in.slow_ops.clear();
  in.predicted = 0.0864;
  const std::vector<std::string> lines = split_verdict_lines(in);
  const std::string text = joined(lines);
  EXPECT_EQ(lines.front().rfind("split (lock-step, 1 x 64): 86.4 ms a step predicted (calibrated), 1.07x slower "
                                "than cpu:0 alone with 2 threads",
                                0),
            0u)
      << text;
  EXPECT_EQ(text.find("micro-batches of"), std::string::npos) << text;
  EXPECT_EQ(text.find("against lock-step"), std::string::npos) << text;
  EXPECT_TRUE(has_line(lines, "  to try: every op on cpu:0")) << text;
}

}  // namespace
}  // namespace devmap
