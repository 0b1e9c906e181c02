#include "transport/trace_wire.h"

#include "core/base/bytes.h"

namespace devmap::wire {
namespace {

constexpr size_t kEventBytes = 8 + 8 + 8 + 4 + 4 + 1;

}  // namespace

void encode_trace_events(const std::vector<TraceEvent>& events, std::string& out) {
  ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(events.size()));
  for (const TraceEvent& e : events) {
    w.put<int64_t>(e.start_ns);
    w.put<int64_t>(e.end_ns);
    w.put<int64_t>(e.step);
    w.put<int32_t>(e.micro);
    w.put<int32_t>(e.id);
    w.put<uint8_t>(static_cast<uint8_t>(e.kind));
  }
  out.append(w.bytes());
}

std::vector<TraceEvent> decode_trace_events(std::string_view bytes) {
  ByteReader r(bytes);
  const uint32_t n = r.get_count(kEventBytes);
  std::vector<TraceEvent> events(n);
  for (TraceEvent& e : events) {
    e.start_ns = r.get<int64_t>();
    e.end_ns = r.get<int64_t>();
    e.step = r.get<int64_t>();
    e.micro = r.get<int32_t>();
    e.id = r.get<int32_t>();
    const uint8_t kind = r.get<uint8_t>();
    if (kind > kMaxTraceKind) throw_runtime("malformed trace events: unknown kind " + std::to_string(kind));
    if (e.end_ns < e.start_ns) throw_runtime("malformed trace events: an interval ends before it starts");
    e.kind = static_cast<TraceKind>(kind);
  }
  if (!r.done()) throw_runtime("malformed trace events: bytes after the last event");
  return events;
}

}  // namespace devmap::wire
