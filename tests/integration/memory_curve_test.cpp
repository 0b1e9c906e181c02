// `plan --memory-curve`: the step time predicted over a range of memory
// limits of the plan's largest device, as a picture and as numbers, with
// today's plan marked; a tighter limit never plans more bytes or fewer
// micro-batches.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, ',');) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

TEST(MemoryCurve, PlansTheStepOverLimitsAndMarksToday) {
  TempDir dir;
  const ProcessResult r =
      run_process({DEVMAP_COORDINATOR_BIN, "plan", kConfigs + "fashion_mnist_cnn_budget.yaml", "--memory-curve",
                   dir.path() + "/curve.svg", "--calibration", dir.path() + "/none.tsv"},
                  dir.path(), {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("devmap: memory curve of cpu:0 ("), std::string::npos) << r.err;
  const std::string svg = read_file(dir.path() + "/curve.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("today: "), std::string::npos);
  const auto rows = csv_rows(read_file(dir.path() + "/curve.csv"));
  ASSERT_GE(rows.size(), 6u);  // the header, today, and the limits down to what fits one sample
  EXPECT_EQ(rows[0], (std::vector<std::string>{"device", "limit_bytes", "planned_bytes", "micro_batches",
                                               "predicted_step_ms", "calibrated", "today"}));
  int today = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 7u);
    EXPECT_EQ(rows[i][0], "cpu:0");
    today += rows[i][6] == "1";
    if (rows[i][6] == "1") {
      EXPECT_EQ(rows[i][1], "16777216");  // the config's memory_limit: 16MiB
    }
    if (rows[i][1] != "0") {
      EXPECT_LE(std::stoull(rows[i][2]), std::stoull(rows[i][1])) << "row " << i;
    }
    EXPECT_GT(std::stod(rows[i][4]), 0);
    if (i > 1) {  // limits fall row by row: bytes never rise, micro-batches never fall
      EXPECT_LE(std::stoull(rows[i][2]), std::stoull(rows[i - 1][2])) << "row " << i;
      EXPECT_GE(std::stoll(rows[i][3]), std::stoll(rows[i - 1][3])) << "row " << i;
    }
  }
  EXPECT_EQ(today, 1);
  EXPECT_GT(std::stoll(rows.back()[3]), std::stoll(rows[1][3]));  // the tightest limit needs more micro-batches
}

TEST(MemoryCurve, AFileThatIsNeitherSvgNorCsvIsBadInput) {
  TempDir dir;
  const ProcessResult r = run_process(
      {DEVMAP_COORDINATOR_BIN, "plan", kConfigs + "fashion_mnist_cnn.yaml", "--memory-curve", dir.path() + "/c.png"},
      dir.path(), {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/c.png: name an .svg file (the picture; the numbers go beside it as .csv) or a .csv file"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/c.png"));
}

}  // namespace
}  // namespace devmap::testing
