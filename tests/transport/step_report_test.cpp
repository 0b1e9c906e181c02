// STEP_DONE framing: what the worker encodes, the coordinator decodes, and
// a tail that does not add up is an error.
#include "transport/step_report.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace devmap {
namespace {

TEST(StepReport, RoundTripsEveryTail) {
  wire::StepDone done{};
  done.step = 7;
  done.loss = 1.5f;
  wire::ParamStat st{};
  wire::copy_name(st.name, "fc1.weight");
  st.grad_norm = 2;
  const std::vector<wire::MicroResult> micro = {{0.5f, 0.25f}, {0.75f, 1.0f}};
  const std::vector<TraceEvent> trace = {TraceEvent{100, 200, 7, 1, 3, TraceKind::kForward}};
  const std::string frame = wire::encode_step_done(done, {st}, micro, &trace);
  const wire::StepReport r = wire::decode_step_done(wire::Message::parse(frame));
  EXPECT_EQ(r.done.step, 7);
  EXPECT_EQ(r.done.loss, 1.5f);
  ASSERT_EQ(r.param_stats.size(), 1u);
  EXPECT_EQ(wire::read_name(r.param_stats[0].name), "fc1.weight");
  ASSERT_EQ(r.micro.size(), 2u);
  EXPECT_EQ(r.micro[1].loss, 0.75f);
  ASSERT_EQ(r.trace.size(), 1u);
  EXPECT_EQ(r.trace[0].end_ns, 200);
  // Without tails: nothing but the fixed part.
  const wire::StepReport bare =
      wire::decode_step_done(wire::Message::parse(wire::encode_step_done(done, {}, {}, nullptr)));
  EXPECT_TRUE(bare.param_stats.empty() && bare.micro.empty() && bare.trace.empty());
  EXPECT_EQ(bare.done.trace_bytes, 0u);
}

TEST(StepReport, TailsThatDoNotAddUpAreErrors) {
  wire::StepDone done{};
  done.micro_results = 3;  // says three, carries none
  const std::string body(reinterpret_cast<const char*>(&done), sizeof done);
  EXPECT_THROW(
      wire::decode_step_done(wire::Message::parse(wire::frame(wire::MsgType::kStepDone, std::string_view(body)))),
      Error);
  done.micro_results = 0;
  done.trace_bytes = 1 << 20;
  const std::string lying(reinterpret_cast<const char*>(&done), sizeof done);
  EXPECT_THROW(
      wire::decode_step_done(wire::Message::parse(wire::frame(wire::MsgType::kStepDone, std::string_view(lying)))),
      Error);
}

}  // namespace
}  // namespace devmap
