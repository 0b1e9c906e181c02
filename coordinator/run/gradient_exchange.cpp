#include "coordinator/run/gradient_exchange.h"

#include <algorithm>
#include <thread>

#include "transport/params_io.h"
#include "transport/wire.h"

namespace devmap {

std::vector<GradientExchange::Entry> GradientExchange::layout(const Graph& graph) {
  std::vector<Entry> entries;
  size_t at = 0;
  for (auto n = graph.nodes().rbegin(); n != graph.nodes().rend(); ++n)
    for (const ParamSpec& p : n->params) {
      if (!p.trained) continue;  // op state (running statistics): each replica keeps its own
      const size_t count = static_cast<size_t>(p.shape.numel());
      entries.push_back({n->name + "." + p.name + ".grad", n->device, at, count});
      at += count;
    }
  return entries;
}

std::vector<GradientExchange::Span> GradientExchange::buckets(const std::vector<Entry>& entries, int64_t bucket_bytes) {
  const size_t bucket_floats = std::max<size_t>(static_cast<size_t>(bucket_bytes) / sizeof(float), 1);
  std::vector<Span> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (out.empty() || out.back().offset + bucket_floats <= entries[i].offset)
      out.push_back(Span{i, i, entries[i].offset, 0});
    out.back().end = i + 1;
    out.back().count = entries[i].offset + entries[i].count - out.back().offset;
  }
  return out;
}

GradientExchange::GradientExchange(WorkerGroup& group, const Graph& graph, const std::string& segment_name,
                                   int64_t bucket_bytes, StartSum start_sum)
    : group_(group),
      entries_(layout(graph)),
      floats_(entries_.empty() ? 0 : entries_.back().offset + entries_.back().count),  // laid out back to back
      segment_(ShmSegment::create(segment_name, (floats_ + kTotals) * sizeof(float))),
      start_sum_(std::move(start_sum)) {
  for (const Span& span : buckets(entries_, bucket_bytes)) {
    Bucket b;
    b.span = span;
    buckets_.push_back(std::move(b));
    bucket_of_.resize(span.end, buckets_.size() - 1);
  }
  // The step's loss and metric follow the gradients in the last bucket, so
  // they cross the hosts with it instead of in a round trip of their own.
  if (buckets_.empty()) buckets_.emplace_back();
  buckets_.back().span.count += kTotals;
  std::map<std::string, ParamsIo> by_device;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    ParamsIo& io = by_device[e.device];
    io.op = ParamsIo::Op::kMapGradients;
    io.path = segment_name;
    io.entries.push_back({e.name, e.offset * sizeof(float), e.count * sizeof(float), FileDtype::kF32});
    by_device_[e.device].push_back(i);
  }
  std::map<std::string, std::string> frames;
  for (const auto& [device, io] : by_device)
    frames[device] = wire::frame(wire::MsgType::kParamsIo, std::string_view(encode_params_io(io)));
  group_.request(frames, wire::MsgType::kParamsDone, "the gradient segment to map");
}

void GradientExchange::begin(int64_t step) {
  step_ = step;
  next_bucket_ = 0;
  totals_in_ = false;
  for (Bucket& b : buckets_) b.ready = 0;
  group_.set_side_work(
      {[this](const std::string& device, const wire::GradientReady& g) { on_gradient(device, g.entry); },
       [this] { return progress(); }});
}

void GradientExchange::on_gradient(const std::string& device, uint32_t entry) {
  auto it = by_device_.find(device);
  if (it == by_device_.end() || entry >= it->second.size())
    throw_runtime(device + " reported gradient " + std::to_string(entry) + ", which it does not hold");
  ++buckets_[bucket_of_[it->second[entry]]].ready;
  start_ready_buckets();
}

void GradientExchange::start_ready_buckets() {
  // In bucket order on every replica: collectives match by order.
  while (next_bucket_ < buckets_.size()) {
    Bucket& b = buckets_[next_bucket_];
    if (b.ready < b.span.end - b.span.first) return;
    if (next_bucket_ + 1 == buckets_.size() && !totals_in_) return;  // the last waits for the loss (finish)
    b.started_ns = trace_now_ns();
    b.sum = start_sum_(static_cast<float*>(segment_.data()) + b.span.offset, b.span.count);
    ++next_bucket_;
    progress();
  }
}

void GradientExchange::ended(Bucket& b) {
  b.sum = nullptr;
  wire::Step s{};
  s.step = step_;
  s.flags = wire::kTrain;
  if (group_.trace() && group_.trace()->covers(s))
    group_.trace()->add_coordinator("allreduce", b.started_ns, trace_now_ns(), s);
}

bool GradientExchange::progress() {
  bool in_flight = false;
  for (Bucket& b : buckets_) {
    if (b.sum && b.sum()) ended(b);
    in_flight = in_flight || b.sum;
  }
  return in_flight;
}

void GradientExchange::finish(int64_t step, StepResult& result) {
  group_.set_side_work({});
  float* totals = static_cast<float*>(segment_.data()) + floats_;
  totals[0] = result.loss;
  totals[1] = result.metric;
  totals_in_ = true;
  // Every gradient arrived before its worker's STEP_DONE.
  start_ready_buckets();
  if (next_bucket_ < buckets_.size())
    throw_runtime("step " + std::to_string(step + 1) + " ended with gradients of bucket " +
                  std::to_string(next_bucket_) + " missing");
  for (Bucket& b : buckets_)
    while (b.sum) {
      if (b.sum())
        ended(b);
      else
        std::this_thread::sleep_for(kMpiPollInterval);
    }
  result.loss = totals[0];
  result.metric = totals[1];
  wire::Step update{};
  update.step = step;
  update.flags = wire::kTrain | wire::kUpdateOnly;
  group_.send(update);
  const StepResult done = group_.collect();
  result.compute_seconds += done.compute_seconds;
}

}  // namespace devmap
