#include "coordinator/gradient_exchange.h"

#include "transport/params_io.h"
#include "transport/wire.h"

namespace devmap {

namespace {

size_t total_count(const std::vector<GradientExchange::Entry>& entries) {
  return entries.empty() ? 0 : entries.back().offset + entries.back().count;
}

}  // namespace

std::vector<GradientExchange::Entry> GradientExchange::layout(const Graph& graph) {
  std::vector<Entry> entries;
  size_t at = 0;
  for (const Node& n : graph.nodes())
    for (const ParamSpec& p : n.params) {
      if (!p.trained) continue;  // op state (running statistics): each replica keeps its own
      const size_t count = static_cast<size_t>(p.shape.numel());
      entries.push_back({n.name + "." + p.name + ".grad", n.device, at, count});
      at += count;
    }
  return entries;
}

GradientExchange::GradientExchange(const Graph& graph, const std::string& segment_name, Reduce reduce)
    : entries_(layout(graph)),
      floats_(total_count(entries_)),
      segment_(ShmSegment::create(segment_name, (floats_ + 2) * sizeof(float))),
      path_("/dev/shm/" + segment_name),
      reduce_(std::move(reduce)) {}

std::map<std::string, std::string> GradientExchange::frames(bool save) const {
  std::map<std::string, ParamsIo> by_device;
  for (const Entry& e : entries_) {
    ParamsIo& io = by_device[e.device];
    io.op = save ? ParamsIo::Op::kSave : ParamsIo::Op::kLoad;
    io.path = path_;
    io.entries.push_back({e.name, e.offset * sizeof(float), e.count * sizeof(float), FileDtype::kF32});
  }
  std::map<std::string, std::string> out;
  for (const auto& [device, io] : by_device)
    out[device] = wire::frame(wire::MsgType::kParamsIo, std::string_view(encode_params_io(io)));
  return out;
}

void GradientExchange::exchange(WorkerGroup& group, int64_t step, StepResult& result) {
  float* data = static_cast<float*>(segment_.data());
  group.request(frames(/*save=*/true), wire::MsgType::kParamsDone, "the request for its gradients");
  data[floats_] = result.loss;
  data[floats_ + 1] = result.metric;
  reduce_(data, floats_ + 2);
  result.loss = data[floats_];
  result.metric = data[floats_ + 1];
  group.request(frames(/*save=*/false), wire::MsgType::kParamsDone, "the gradients summed over the replicas");
  wire::Step update{};
  update.step = step;
  update.flags = wire::kTrain | wire::kUpdateOnly;
  group.send(update);
  const StepResult done = group.collect();
  result.compute_seconds += done.compute_seconds;
}

}  // namespace devmap
