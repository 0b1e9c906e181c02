#include "transport/step_report.h"

#include <cstring>

#include "core/base/error.h"
#include "transport/trace_wire.h"

namespace devmap::wire {

namespace {

template <typename T>
void append(std::string& out, const std::vector<T>& entries) {
  out.append(reinterpret_cast<const char*>(entries.data()), entries.size() * sizeof(T));
}

template <typename T>
std::vector<T> read_entries(const std::string& body, size_t at, uint32_t count) {
  std::vector<T> out(count);
  if (count > 0) std::memcpy(out.data(), body.data() + at, count * sizeof(T));
  return out;
}

}  // namespace

std::string encode_step_done(StepDone done, const std::vector<ParamStat>& param_stats,
                             const std::vector<MicroResult>& micro, const std::vector<TraceEvent>* trace) {
  done.param_stats = static_cast<uint32_t>(param_stats.size());
  done.micro_results = static_cast<uint32_t>(micro.size());
  std::string tail;
  if (trace) encode_trace_events(*trace, tail);
  done.trace_bytes = tail.size();
  std::string body(reinterpret_cast<const char*>(&done), sizeof done);
  append(body, param_stats);
  append(body, micro);
  body += tail;
  return frame(MsgType::kStepDone, std::string_view(body));
}

StepReport decode_step_done(const Message& m) {
  StepReport r;
  r.done = m.as<StepDone>(/*allow_tail=*/true);
  if (r.done.trace_bytes > m.body.size()) throw_runtime("a STEP_DONE shorter than its trace events");
  const size_t stats_at = sizeof r.done;
  const size_t micro_at = stats_at + r.done.param_stats * sizeof(ParamStat);
  const size_t trace_at = micro_at + r.done.micro_results * sizeof(MicroResult);
  check_body_size(m, trace_at + r.done.trace_bytes, false);
  r.param_stats = read_entries<ParamStat>(m.body, stats_at, r.done.param_stats);
  r.micro = read_entries<MicroResult>(m.body, micro_at, r.done.micro_results);
  if (r.done.trace_bytes > 0) r.trace = decode_trace_events(std::string_view(m.body).substr(trace_at));
  return r;
}

}  // namespace devmap::wire
