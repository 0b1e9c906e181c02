// Trace events in STEP_DONE's tail: every field survives the round trip,
// and malformed tails are errors, never reads past the end.
#include "transport/trace_wire.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace devmap {
namespace {

TEST(TraceWire, EventsRoundTripFieldByField) {
  std::vector<TraceEvent> in = {
      TraceEvent{1000, 2500, 7, 3, 12, TraceKind::kBackward},
      TraceEvent{-5, 0, 0, -1, -1, TraceKind::kOptimizer},
      TraceEvent{int64_t{1} << 60, (int64_t{1} << 60) + 1, 123456789, 0, 2, TraceKind::kSlotWait},
  };
  std::string bytes = "prefix";
  wire::encode_trace_events(in, bytes);
  const std::vector<TraceEvent> out = wire::decode_trace_events(std::string_view(bytes).substr(6));
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].start_ns, in[i].start_ns);
    EXPECT_EQ(out[i].end_ns, in[i].end_ns);
    EXPECT_EQ(out[i].step, in[i].step);
    EXPECT_EQ(out[i].micro, in[i].micro);
    EXPECT_EQ(out[i].id, in[i].id);
    EXPECT_EQ(out[i].kind, in[i].kind);
  }
  std::string none;
  wire::encode_trace_events({}, none);
  EXPECT_TRUE(wire::decode_trace_events(none).empty());
}

TEST(TraceWire, MalformedTailsAreErrors) {
  std::string bytes;
  wire::encode_trace_events({TraceEvent{10, 20, 1, 0, 4, TraceKind::kForward}}, bytes);
  // Cut short, or with a byte too many.
  EXPECT_THROW(wire::decode_trace_events(std::string_view(bytes).substr(0, bytes.size() - 1)), Error);
  EXPECT_THROW(wire::decode_trace_events(bytes + "x"), Error);
  // A count larger than the bytes can hold.
  std::string big = bytes;
  big[0] = static_cast<char>(0xff);
  EXPECT_THROW(wire::decode_trace_events(big), Error);
  // An unknown kind (the last byte of the event).
  std::string kind = bytes;
  kind.back() = static_cast<char>(kMaxTraceKind + 1);
  EXPECT_THROW(wire::decode_trace_events(kind), Error);
  // An interval that ends before it starts.
  std::string backwards;
  wire::encode_trace_events({TraceEvent{20, 10, 1, 0, 4, TraceKind::kForward}}, backwards);
  EXPECT_THROW(wire::decode_trace_events(backwards), Error);
}

}  // namespace
}  // namespace devmap
