// STEP_DONE as one struct: its fixed part and the tails that may follow it
// (parameter statistics, each batch's result of an evaluation or prediction
// round, the step's trace events), framed here so that the worker and the
// coordinator speak only in structs.
#pragma once

#include <string>
#include <vector>

#include "core/exec/trace.h"
#include "transport/wire.h"

namespace devmap::wire {

struct StepReport {
  StepDone done{};  // its counts and trace_bytes describe the tails below
  std::vector<ParamStat> param_stats;
  std::vector<MicroResult> micro;
  std::vector<TraceEvent> trace;
};

// The STEP_DONE frame of `done` and its tails; the counts and trace_bytes of
// `done` are set from them. `trace` may be null (not traced).
std::string encode_step_done(StepDone done, const std::vector<ParamStat>& param_stats,
                             const std::vector<MicroResult>& micro, const std::vector<TraceEvent>* trace);
// Decodes a STEP_DONE message; throws devmap::Error (kRuntime) naming what
// does not add up (a tail longer or shorter than its counts say, malformed
// trace events).
StepReport decode_step_done(const Message& m);

}  // namespace devmap::wire
