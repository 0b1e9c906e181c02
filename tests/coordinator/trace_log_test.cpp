// TraceLog's rules without processes: --trace-steps parsing, which steps
// and rounds are traced, and the file's tracks, names and flows.
#include "coordinator/telemetry/trace_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "tests/coordinator/temp_dir.h"

namespace devmap {
namespace {

TEST(TraceSteps, ParsesAnOrderedRangeOfOneBasedSteps) {
  const TraceSteps r = parse_trace_steps("--trace-steps", "3:5");
  EXPECT_EQ(r.first, 3);
  EXPECT_EQ(r.last, 5);
  EXPECT_EQ(parse_trace_steps("--trace-steps", "7:7").last, 7);
  for (const char* bad : {"5:3", "0:2", "3", "3:", ":5", "a:b", "3:5x", "-1:2"})
    EXPECT_THROW(parse_trace_steps("--trace-steps", bad), Error) << bad;
}

wire::Step step(int64_t s, bool train) {
  wire::Step out{};
  out.step = s;
  out.flags = train ? static_cast<uint32_t>(wire::kTrain) : 0u;
  return out;
}

TEST(TraceLog, TrainingStepsInRangeAndTheEvaluationAfterThem) {
  TraceLog log("unused.json", TraceSteps{3, 5}, /*prediction=*/false);
  EXPECT_FALSE(log.sent(step(1, true)));  // 0-based step 1 is step 2
  EXPECT_FALSE(log.covers(step(0, false)));
  EXPECT_TRUE(log.sent(step(2, true)));
  EXPECT_TRUE(log.covers(step(0, false)));  // evaluation after step 3
  EXPECT_TRUE(log.sent(step(4, true)));
  EXPECT_FALSE(log.sent(step(5, true)));
  EXPECT_FALSE(log.covers(step(0, false)));  // evaluation after step 6
  TraceLog predict("unused.json", TraceSteps{}, /*prediction=*/true);
  EXPECT_TRUE(predict.sent(step(9, false)));
}

TEST(TraceLog, WritesNamedTracksSlicesAndAFlowFromSendToReceive) {
  test::TempDir dir;
  Graph g;
  // Names come from the graph and the partition; a bare graph of no nodes
  // leaves op ids as "#N".
  Partition p;
  p.devices = {"cpu:0", "cpu:1"};
  Edge e;
  e.name = "conv1";
  p.edges.push_back(e);
  TraceLog log(dir.file("t.json"), TraceSteps{}, false);
  log.describe(g, p);
  const wire::Step s = step(0, true);
  ASSERT_TRUE(log.sent(s));
  const int64_t t = trace_now_ns();
  log.add_worker("cpu:0", s,
                 {TraceEvent{t, t + 5000, 0, -1, -1, TraceKind::kStep},
                  TraceEvent{t + 1000, t + 2000, 0, 1, 0, TraceKind::kSend}});
  log.add_worker(
      "cpu:1", s,
      {TraceEvent{t, t + 6000, 0, -1, -1, TraceKind::kStep}, TraceEvent{t + 500, t + 2500, 0, 1, 0, TraceKind::kRecv}});
  log.add_coordinator("wait", t, t + 7000, s);
  EXPECT_THROW(log.add_worker("cpu:7", s, {}), Error);
  EXPECT_EQ(log.slices(), 5u);
  log.write();
  std::ifstream in(dir.file("t.json"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string j = text.str();
  for (const char* want : {R"("name":"process_name","ph":"M","pid":2,"tid":1,"args":{"name":"cpu:1"})",
                           R"("name":"step 1","cat":"step","ph":"X")", R"("name":"send conv1","cat":"send")",
                           R"("name":"recv conv1","cat":"recv")", R"("name":"wait step 1","cat":"wait")",
                           R"("args":{"phase":"train","step":1,"micro_batch":1})", R"("cat":"tensor","ph":"s","id":1,)",
                           R"("cat":"tensor","ph":"f","bp":"e","id":1,)", "\"traceEvents\":["})
    EXPECT_NE(j.find(want), std::string::npos) << want << "\n" << j;
}

}  // namespace
}  // namespace devmap
