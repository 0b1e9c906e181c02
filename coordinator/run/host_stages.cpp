#include "coordinator/run/host_stages.h"

#include <algorithm>
#include <cstring>

#include "core/base/error.h"

namespace devmap {
namespace {

struct ResultHead {
  float loss, metric;
  double compute_seconds;
  uint64_t param_stats, micro;
};
static_assert(std::is_trivially_copyable_v<ResultHead>);

template <typename T>
void append(std::string& out, const T* items, size_t n) {
  if (n > 0) out.append(reinterpret_cast<const char*>(items), n * sizeof(T));
}

// Copies `v.size()` items from `at` into `v`; returns the end of what it read.
template <typename T>
const char* take(std::vector<T>& v, const char* at) {
  if (!v.empty()) std::memcpy(v.data(), at, v.size() * sizeof(T));
  return at + v.size() * sizeof(T);
}

}  // namespace

std::string encode_step_result(const StepResult& r) {
  ResultHead head{r.loss, r.metric, r.compute_seconds, r.param_stats.size(), r.micro.size()};
  std::string out;
  append(out, &head, 1);
  append(out, r.param_stats.data(), r.param_stats.size());
  append(out, r.micro.data(), r.micro.size());
  return out;
}

StepResult decode_step_result(const std::string& bytes) {
  ResultHead head{};
  if (bytes.size() < sizeof head) throw_runtime("a step result of " + std::to_string(bytes.size()) + " bytes");
  std::memcpy(&head, bytes.data(), sizeof head);
  const uint64_t want =
      sizeof head + head.param_stats * sizeof(wire::ParamStat) + head.micro * sizeof(wire::MicroResult);
  if (head.param_stats > bytes.size() || head.micro > bytes.size() || want != bytes.size())
    throw_runtime("a step result of " + std::to_string(bytes.size()) + " bytes does not hold what its head says");
  StepResult r;
  r.loss = head.loss;
  r.metric = head.metric;
  r.compute_seconds = head.compute_seconds;
  r.param_stats.resize(head.param_stats);
  r.micro.resize(head.micro);
  take(r.micro, take(r.param_stats, bytes.data() + sizeof head));
  return r;
}

HostStages::HostStages(int rank, std::map<std::string, int> device_ranks, HostLinks links)
    : rank_(rank), device_ranks_(std::move(device_ranks)), links_(std::move(links)) {}

int HostStages::rank_of(const std::string& device) const {
  auto it = device_ranks_.find(device);
  if (it == device_ranks_.end()) throw_runtime("internal: device " + device + " has no host");
  return it->second;
}

std::unique_ptr<EdgeRelay> HostStages::relay(const std::vector<ChannelEdge>& edges,
                                             const std::map<std::string, std::string>& endpoints) const {
  RelayPlan plan;
  plan.rank = rank_;
  plan.endpoints = endpoints;
  for (const ChannelEdge& e : edges) {
    RelayEdge r{e, rank_of(e.producer), {}};
    bool here = r.producer_rank == rank_, elsewhere = false;
    for (const std::string& c : e.consumers) {
      r.consumer_ranks.push_back(rank_of(c));
      here = here || r.consumer_ranks.back() == rank_;
      elsewhere = elsewhere || r.consumer_ranks.back() != r.producer_rank;
    }
    // Consumers on hosts other than this one and the producer's meet the
    // tensor through their own host's relay.
    if (here && elsewhere) plan.edges.push_back(std::move(r));
  }
  if (plan.edges.empty()) return nullptr;
  return links_.relay(std::move(plan));
}

void HostStages::combine(StepResult& result, const std::function<void()>& pump) const {
  const std::vector<std::string> all = links_.allgather(encode_step_result(result), pump);
  StepResult sum;
  for (const std::string& bytes : all) {
    const StepResult r = decode_step_result(bytes);
    sum.loss += r.loss;
    sum.metric += r.metric;
    sum.compute_seconds = std::max(sum.compute_seconds, r.compute_seconds);
    sum.param_stats.insert(sum.param_stats.end(), r.param_stats.begin(), r.param_stats.end());
    if (sum.micro.size() < r.micro.size()) sum.micro.resize(r.micro.size());
    for (size_t i = 0; i < r.micro.size(); ++i) {
      sum.micro[i].loss += r.micro[i].loss;
      sum.micro[i].metric += r.micro[i].metric;
    }
  }
  result = std::move(sum);
}

}  // namespace devmap
