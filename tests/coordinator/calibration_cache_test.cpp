// The calibration cache: what `coordinator calibrate` measured survives a
// save and a load, keyed by device and op signature; a damaged file is an
// error naming its line.
#include "coordinator/plan/calibration_cache.h"

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "tests/coordinator/temp_dir.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

TEST(CalibrationCache, EntriesSurviveASaveAndALoad) {
  test::TempDir dir;
  const std::string path = dir.file("sub/cal.tsv");
  CalibrationCache c;
  c.put_op("dev", "conv2d(k=5) in [1,28,28]d out [32,28,28]", 16, OpSeconds{1.5e-3, 3.25e-3});
  c.put_op("dev", "conv2d(k=5) in [1,28,28]d out [32,28,28]", 32, OpSeconds{2.5e-3, 5e-3});
  c.put_optimizer("dev", "momentum", 2e-9);
  c.put_link("machine", "cpu", "cpu", LinkCost{40e-6, 8e9});
  c.put_contention("two cpus", 0.125);
  c.put_step_overhead("dev", 1.5e-3);
  c.save(path);
  const CalibrationCache back = CalibrationCache::load(path);
  EXPECT_EQ(back.size(), 6u);
  const auto op = back.op("dev", "conv2d(k=5) in [1,28,28]d out [32,28,28]", 16);
  ASSERT_TRUE(op.has_value());
  EXPECT_DOUBLE_EQ(op->forward, 1.5e-3);
  EXPECT_DOUBLE_EQ(op->backward, 3.25e-3);
  EXPECT_EQ(back.op_sizes("dev", "conv2d(k=5) in [1,28,28]d out [32,28,28]").size(), 2u);
  EXPECT_FALSE(back.op("other device", "conv2d(k=5) in [1,28,28]d out [32,28,28]", 16).has_value());
  EXPECT_FALSE(back.op("dev", "conv2d(k=3) in [1,28,28]d out [32,28,28]", 16).has_value());
  EXPECT_DOUBLE_EQ(*back.optimizer("dev", "momentum"), 2e-9);
  EXPECT_FALSE(back.optimizer("dev", "adam").has_value());
  EXPECT_NEAR(back.link("machine", "cpu", "cpu")->seconds(8000), 41e-6, 1e-12);
  EXPECT_FALSE(back.link("machine", "cpu", "gpu").has_value());
  EXPECT_DOUBLE_EQ(*back.contention("two cpus"), 0.125);
  EXPECT_FALSE(back.contention("three cpus").has_value());
  EXPECT_DOUBLE_EQ(*back.step_overhead("dev"), 1.5e-3);
}

TEST(CalibrationCache, AMissingFileIsEmptyAndADamagedOneNamesItsLine) {
  test::TempDir dir;
  EXPECT_EQ(CalibrationCache::load(dir.file("none.tsv")).size(), 0u);
  const std::string bad = dir.write("bad.tsv", "# devmap calibration v1\nop\tdev\tabc\t16\t0.1\n");
  try {
    CalibrationCache::load(bad);
    FAIL() << "a damaged cache loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find(bad + ":2: not a calibration entry"), std::string::npos) << e.what();
  }
}

// Values no machine measures are refused with their line, before a planner
// could divide or sort by them; CRLF line ends read as LF.
TEST(CalibrationCache, NonFiniteAndAbsurdValuesAreRefusedWithTheirLine) {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"op\tdev\tsig\t16\tinf\t0.1", "'inf' is not a time in seconds (0 to 3600)"},
      {"op\tdev\tsig\t16\t1e308\t0.1", "'1e308' is not a time in seconds (0 to 3600)"},
      {"op\tdev\tsig\t16\t0x1p2000\t0.1", "'0x1p2000' is not a time in seconds (0 to 3600)"},
      {"op\tdev\tsig\t16\tnan\t0.1", "'nan' is not a time in seconds (0 to 3600)"},
      {"op\tdev\tsig\t0\t0.1\t0.1", "'0' is not a batch size (1 to 1e+09)"},
      {"op\tdev\tsig\t1.5\t0.1\t0.1", "'1.5' is not a batch size (1 to 1e+09)"},
      {"contention\tk\tinf", "'inf' is not a contention factor (0 to 100)"},
      {"rate\tk\t0", "'0' is not a rate in FLOP/s (1 to 1e+17)"},
      {"link\tm\tcpu->cpu\t1e30\t1e9", "'1e30' is not a latency in seconds (0 to 60)"},
  };
  for (const auto& [line, message] : cases) {
    const std::string path = dir.write("bad.tsv", "# devmap calibration v1\n" + line + "\n");
    try {
      CalibrationCache::load(path);
      ADD_FAILURE() << line << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(path + ":2: " + message), std::string::npos) << e.what();
    }
  }
  const std::string crlf =
      dir.write("crlf.tsv", "# devmap calibration v1\r\nop\tdev\t" + key_hash("sig") + "\t16\t4.02469e-05\t0.1\r\n");
  const auto op = CalibrationCache::load(crlf).op("dev", "sig", 16);
  ASSERT_TRUE(op.has_value());
  EXPECT_DOUBLE_EQ(op->forward, 4.02469e-05);
}

// The file stays bounded: past kMaxEntries a save keeps only the keys it
// measured (the others belong to earlier worker builds, mostly), and a file
// larger than devmap writes is refused with its size.
TEST(CalibrationCache, TheFileIsBoundedAndPrunedToWhatWasMeasured) {
  test::TempDir dir;
  const std::string path = dir.file("cal.tsv");
  {
    std::string text = "# devmap calibration v1\n";
    for (size_t i = 0; i <= CalibrationCache::kMaxEntries; ++i)
      text += "op\told\t" + key_hash("sig") + "\t" + std::to_string(i + 1) + "\t0.001\t0.002\n";
    dir.write("cal.tsv", text);
  }
  CalibrationCache c = CalibrationCache::load(path);
  EXPECT_EQ(c.size(), CalibrationCache::kMaxEntries + 1);
  c.put_op("new", "sig", 64, OpSeconds{1e-3, 2e-3});
  c.put_link("machine", "cpu", "cpu", LinkCost{4e-5, 8e9});
  c.save(path);
  const CalibrationCache back = CalibrationCache::load(path);
  EXPECT_EQ(back.size(), 2u);
  EXPECT_TRUE(back.op("new", "sig", 64).has_value());
  EXPECT_FALSE(back.op("old", "sig", 1).has_value());
  const std::string huge =
      dir.write("huge.tsv", "# devmap calibration v1\n" + std::string(CalibrationCache::kMaxFileBytes, '#') + "\n");
  try {
    CalibrationCache::load(huge);
    FAIL() << "a 16 MiB cache was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the calibration cache '" + huge +
                                         "' holds 16 MiB, more than devmap writes (at most 16 MiB): delete it to "
                                         "calibrate again"),
              std::string::npos)
        << e.what();
  }
}

TEST(CalibrationCache, AnOpsSignatureNamesWhatItsTimeDependsOn) {
  const Graph g = reference_cnn();
  const std::string conv1 = op_signature(g, g.find("conv1"));
  const std::string conv2 = op_signature(g, g.find("conv2"));
  EXPECT_NE(conv1, conv2);
  EXPECT_EQ(conv1.rfind("conv2d(", 0), 0u) << conv1;
  EXPECT_NE(conv1.find("[1,28,28]d"), std::string::npos) << conv1;  // its input is data: no input gradient
  EXPECT_EQ(conv2.find("]d"), std::string::npos) << conv2;
  EXPECT_EQ(op_signature(g, g.find("conv1")), conv1);  // the same op, the same key
}

}  // namespace
}  // namespace devmap
