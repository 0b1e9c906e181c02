// The trace events a worker ships in the tail of a STEP_DONE (--trace):
// a count, then per event its fields one by one, little-endian (core/base/bytes.h).
// The layout is part of wire::kProtocolVersion.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/exec/trace.h"

namespace devmap::wire {

// Appends the encoding of `events` to `out`.
void encode_trace_events(const std::vector<TraceEvent>& events, std::string& out);
// Decodes exactly one encoding; throws devmap::Error (kRuntime) when
// `bytes` is malformed (a short tail, an unknown kind, an interval that
// ends before it starts).
std::vector<TraceEvent> decode_trace_events(std::string_view bytes);

}  // namespace devmap::wire
