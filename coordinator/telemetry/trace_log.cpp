#include "coordinator/telemetry/trace_log.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <tuple>

#include "coordinator/util/atomic_file.h"
#include "coordinator/util/json_writer.h"
#include "core/base/error.h"

namespace devmap {

TraceSteps parse_trace_steps(const std::string& flag, const std::string& text) {
  const size_t colon = text.find(':');
  auto number = [&](std::string_view s, int64_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && out >= 1;
  };
  TraceSteps r;
  if (colon == std::string::npos || !number(std::string_view(text).substr(0, colon), r.first) ||
      !number(std::string_view(text).substr(colon + 1), r.last) || r.last < r.first)
    throw_invalid(flag + " needs A:B, training steps from A to B (1 <= A <= B), got '" + text + "' (see --help)");
  return r;
}

std::unique_ptr<TraceLog> make_trace_log(const RunOptions& options, bool prediction) {
  const bool steps_given = options.trace_first != 1 || options.trace_last != 0;
  if (options.trace_path.empty()) {
    if (steps_given) throw_invalid("--trace-steps needs --trace FILE (where to write the timeline)");
    return nullptr;
  }
  TraceSteps steps;
  if (steps_given) steps = TraceSteps{options.trace_first, options.trace_last};
  return std::make_unique<TraceLog>(options.trace_path, steps, prediction);
}

void finish_trace(const TraceLog* trace, std::ostream& log) {
  if (!trace) return;
  trace->write();
  log << "devmap: trace: " << trace->path() << " (" << trace->slices()
      << " slices; open it in ui.perfetto.dev or chrome://tracing)\n";
}

TraceLog::TraceLog(std::string path, TraceSteps steps, bool prediction)
    : path_(std::move(path)), steps_(steps), prediction_(prediction), origin_ns_(trace_now_ns()) {}

void TraceLog::describe(const Graph& graph, const Partition& partition) {
  ++attempt_;
  devices_ = partition.devices;
  op_names_.clear();
  for (int i = 0; i < graph.size(); ++i) op_names_.push_back(graph.node(i).name);
  edge_names_.clear();
  for (const Edge& e : partition.edges) edge_names_.push_back(e.name);
}

int TraceLog::phase_of(const wire::Step& step) const {
  if (step.flags & wire::kTrain) return 0;
  return prediction_ ? 2 : 1;
}

bool TraceLog::covers(const wire::Step& step) const {
  auto in_range = [&](int64_t s) { return s >= steps_.first && s <= steps_.last; };
  switch (phase_of(step)) {
    case 0: return in_range(step.step + 1);
    case 1: return in_range(std::max<int64_t>(last_training_step_, 1));
    default: return true;
  }
}

bool TraceLog::sent(const wire::Step& step) {
  if (step.flags & wire::kTrain) last_training_step_ = step.step + 1;
  return covers(step);
}

void TraceLog::add_worker(const std::string& device, const wire::Step& step, std::vector<TraceEvent> events) {
  int pid = 0;
  for (size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i] == device) pid = static_cast<int>(i) + 1;
  if (pid == 0) throw_runtime("trace events from " + device + ", a device the partition does not use");
  chunks_.push_back(Chunk{attempt_, pid, phase_of(step), step.step + 1, "", std::move(events)});
}

void TraceLog::add_coordinator(const char* what, int64_t start_ns, int64_t end_ns, const wire::Step& step) {
  chunks_.push_back(Chunk{attempt_,
                          0,
                          phase_of(step),
                          step.step + 1,
                          what,
                          {TraceEvent{start_ns, end_ns, step.step, -1, -1, TraceKind::kStep}}});
}

void TraceLog::for_each_training_event(
    const std::function<void(const std::string& device, int64_t step, const TraceEvent& event)>& f) const {
  for (const Chunk& c : chunks_)
    if (c.pid > 0 && c.phase == 0)
      for (const TraceEvent& e : c.events) f(devices_[static_cast<size_t>(c.pid - 1)], c.step, e);
}

size_t TraceLog::slices() const {
  size_t n = 0;
  for (const Chunk& c : chunks_) n += c.events.size();
  return n;
}

namespace {

// Microseconds with three decimals: nanoseconds exactly, so a slice nested
// in another stays inside it in the file.
std::string micros(double us) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  return buf;
}

const char* const kPhases[] = {"train", "evaluation", "prediction"};

const char* category(TraceKind k) {
  switch (k) {
    case TraceKind::kStep: return "step";
    case TraceKind::kForward: return "forward";
    case TraceKind::kBackward: return "backward";
    case TraceKind::kSumGrads: return "sum";
    case TraceKind::kSend: return "send";
    case TraceKind::kRecv: return "recv";
    case TraceKind::kSlotWait: return "slot_wait";
    case TraceKind::kOptimizer: return "optimizer";
    case TraceKind::kFetch: return "fetch";
    case TraceKind::kWriteBack: return "write_back";
  }
  return "other";
}

// A worker's slices on its executor's thread track (1), or its copy
// thread's (2): the offloaded parameters' copies.
int64_t track_of(TraceKind k) {
  return k == TraceKind::kFetch || k == TraceKind::kWriteBack ? 2 : 1;
}

// names[id], or "#id" for an id the names lack.
std::string name_of(const std::vector<std::string>& names, int id) {
  return id >= 0 && static_cast<size_t>(id) < names.size() ? names[static_cast<size_t>(id)] : "#" + std::to_string(id);
}

}  // namespace

// The k-th receive of a tensor on a device takes the k-th send of it: both
// ends of each, in the order their slices were written.
struct TraceLog::Flows {
  // (edge, attempt, phase, step, micro): lock-step micro-batches of one
  // step share a step and micro-batch 0.
  using Key = std::tuple<int, int, int, int64_t, int32_t>;
  struct End {
    int pid;
    double ts;  // where on its slice the arrow starts or ends
  };
  std::map<Key, std::vector<End>> sends;
  std::map<std::pair<Key, int>, std::vector<End>> recvs;  // by receiving pid too
};

void TraceLog::write() const {
  AtomicFile file(path_, "trace");
  std::ostream& out = file.stream();
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"devmap\",\"trace_steps\":"
      << JsonObject::quote(std::to_string(steps_.first) + ":" +
                           (steps_.last == TraceSteps{}.last ? std::string("") : std::to_string(steps_.last)))
      << "},\"traceEvents\":[\n";
  bool first = true;
  const Emit emit = [&](const JsonObject& j) {
    out << (first ? "" : ",\n") << j.str();
    first = false;
  };
  write_tracks(emit);
  Flows flows;
  write_slices(emit, flows);
  write_flows(emit, flows);
  out << "\n]}\n";
  file.commit();
}

void TraceLog::write_tracks(const Emit& emit) const {
  for (size_t pid = 0; pid <= devices_.size(); ++pid) {
    const std::string name = pid == 0 ? "coordinator" : devices_[pid - 1];
    JsonObject meta;
    meta.add("name", "process_name").add("ph", "M").add("pid", static_cast<int64_t>(pid)).add("tid", 1);
    meta.add_raw("args", JsonObject().add("name", name).str());
    emit(meta);
    JsonObject order;
    order.add("name", "process_sort_index").add("ph", "M").add("pid", static_cast<int64_t>(pid)).add("tid", 1);
    order.add_raw("args", JsonObject().add("sort_index", static_cast<int64_t>(pid)).str());
    emit(order);
    JsonObject thread;
    thread.add("name", "thread_name").add("ph", "M").add("pid", static_cast<int64_t>(pid)).add("tid", 1);
    thread.add_raw("args", JsonObject().add("name", pid == 0 ? "main" : "executor").str());
    emit(thread);
    const bool copies = std::any_of(chunks_.begin(), chunks_.end(), [&](const Chunk& c) {
      return c.pid == static_cast<int>(pid) &&
             std::any_of(c.events.begin(), c.events.end(), [](const TraceEvent& e) { return track_of(e.kind) == 2; });
    });
    if (!copies) continue;
    JsonObject copier;
    copier.add("name", "thread_name").add("ph", "M").add("pid", static_cast<int64_t>(pid)).add("tid", 2);
    copier.add_raw("args", JsonObject().add("name", "parameter copies").str());
    emit(copier);
  }
}

std::string TraceLog::slice_name(const Chunk& c, const TraceEvent& e) const {
  if (c.pid == 0) return std::string(c.what) + " " + (c.phase == 0 ? "step " : "round ") + std::to_string(c.step);
  switch (e.kind) {
    case TraceKind::kStep:
      return c.phase == 0 ? "step " + std::to_string(c.step)
                          : std::string(kPhases[c.phase]) + " round " + std::to_string(c.step);
    case TraceKind::kForward: return name_of(op_names_, e.id) + " forward";
    case TraceKind::kBackward: return name_of(op_names_, e.id) + " backward";
    case TraceKind::kSumGrads: return name_of(op_names_, e.id) + " gradient sum";
    case TraceKind::kSend: return "send " + name_of(edge_names_, e.id);
    case TraceKind::kRecv: return "recv " + name_of(edge_names_, e.id);
    case TraceKind::kSlotWait: return "wait for a slot of " + name_of(edge_names_, e.id);
    case TraceKind::kOptimizer: return "optimizer update";
    case TraceKind::kFetch: return "fetch " + name_of(op_names_, e.id) + " parameters";
    case TraceKind::kWriteBack: return "write back " + name_of(op_names_, e.id) + " gradients";
  }
  return "";
}

void TraceLog::write_slices(const Emit& emit, Flows& flows) const {
  for (const Chunk& c : chunks_) {
    for (const TraceEvent& e : c.events) {
      const double ts = static_cast<double>(e.start_ns - origin_ns_) * 1e-3;
      const double dur = static_cast<double>(e.end_ns - e.start_ns) * 1e-3;
      JsonObject j;
      j.add("name", slice_name(c, e)).add("cat", c.pid == 0 ? c.what : category(e.kind)).add("ph", "X");
      j.add_raw("ts", micros(ts)).add_raw("dur", micros(dur)).add("pid", c.pid);
      j.add("tid", c.pid == 0 ? int64_t{1} : track_of(e.kind));
      JsonObject args;
      args.add("phase", kPhases[c.phase]).add("step", c.step);
      if (e.micro >= 0) args.add("micro_batch", static_cast<int64_t>(e.micro));
      j.add_raw("args", args.str());
      emit(j);
      const Flows::Key key{e.id, c.attempt, c.phase, c.step, e.micro};
      if (e.kind == TraceKind::kSend) flows.sends[key].push_back(Flows::End{c.pid, ts + dur * 0.5});
      if (e.kind == TraceKind::kRecv) flows.recvs[{key, c.pid}].push_back(Flows::End{c.pid, ts + dur * 0.75});
    }
  }
}

void TraceLog::write_flows(const Emit& emit, const Flows& flows) const {
  int64_t id = 0;
  for (const auto& [key_pid, ends] : flows.recvs) {
    auto it = flows.sends.find(key_pid.first);
    if (it == flows.sends.end()) continue;
    for (size_t k = 0; k < ends.size() && k < it->second.size(); ++k) {
      ++id;
      const Flows::End& s = it->second[k];
      const Flows::End& f = ends[k];
      const std::string name = "tensor " + name_of(edge_names_, std::get<0>(key_pid.first));
      JsonObject a, b;
      a.add("name", name)
          .add("cat", "tensor")
          .add("ph", "s")
          .add("id", id)
          .add_raw("ts", micros(s.ts))
          .add("pid", s.pid);
      a.add("tid", 1);
      b.add("name", name).add("cat", "tensor").add("ph", "f").add("bp", "e").add("id", id).add_raw("ts", micros(f.ts));
      b.add("pid", f.pid).add("tid", 1);
      emit(a);
      emit(b);
    }
  }
}

}  // namespace devmap
