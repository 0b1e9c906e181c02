// GradientExchange: the step of a data-parallel replica between its backward
// passes and its update. Each worker writes its parameters' gradients into
// one shared-memory segment of this host (PARAMS_IO, "op.param.grad"), the
// segment's gradients, loss and metric are replaced by their sum over the
// replicas (`reduce`: on several hosts, MpiSession::allreduce_sum_ordered,
// which adds the replicas in rank order), the workers read the sums back,
// and each applies its optimizer update (STEP with wire::kUpdateOnly).
//
// A replica's micro-batches carry the step's whole batch as batch_total, so
// each gradient and loss is already its share of the step's mean: the sum
// over replicas is the step's gradient. Not bucketed yet: the exchange
// starts after the last backward pass, and moves every gradient at once.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "coordinator/worker_group.h"
#include "core/graph.h"
#include "transport/shm_segment.h"

namespace devmap {

class GradientExchange {
 public:
  // Sums `count` floats at `data` across the replicas, in place, the same
  // bits on every replica.
  using Reduce = std::function<void(float* data, size_t count)>;

  // Lays out the trained parameters of `graph` (each on its op's device) and
  // creates the segment `segment_name` for them.
  GradientExchange(const Graph& graph, const std::string& segment_name, Reduce reduce);

  // After the step's last backward pass (every micro-batch sent with
  // wire::kNoUpdate): sums the gradients and `result`'s loss and metric
  // over the replicas, then has every worker apply the update of `step`.
  void exchange(WorkerGroup& group, int64_t step, StepResult& result);

  size_t gradient_floats() const { return floats_; }

  // A trained parameter's gradient in the segment, in floats.
  struct Entry {
    std::string name, device;  // "conv1.weight.grad"
    size_t offset = 0, count = 0;
  };

 private:
  // The trained parameters' gradients of `graph`, in op order.
  static std::vector<Entry> layout(const Graph& graph);
  // PARAMS_IO frames, by device, that write (save) or read the gradients.
  std::map<std::string, std::string> frames(bool save) const;

  std::vector<Entry> entries_;
  size_t floats_ = 0;  // gradients; the loss and the metric follow
  ShmSegment segment_;
  std::string path_;  // the segment as a file, for the workers' PARAMS_IO
  Reduce reduce_;
};

}  // namespace devmap
