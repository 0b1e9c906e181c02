// GradientExchange: a data-parallel step's gradients, summed across the
// replicas while the backward pass still runs. The gradients live in one
// shared-memory segment of this host, laid out in the order the backward
// pass makes them (the ops from last to first) and cut into buckets of
// about data_parallel.bucket_size bytes. Each worker maps it (PARAMS_IO
// kMapGradients); during the step's last micro-batch (wire::kSendGradients)
// each gradient is there as soon as its op's backward has made it (a CPU
// worker's backward writes it there; GradientOutlet) and the worker says
// so (GRADIENT_READY). A bucket whose gradients are all there
// starts its sum across the hosts (`start_sum`: on several hosts,
// MpiSession::start_sum_ordered, which adds the replicas in rank order, so
// the bucketing never changes a bit), in bucket order on every replica.
// The sums are tested between the workers' messages (WorkerGroup's side
// work, every kMpiPollInterval) while the workers, other processes, go on
// with the backward pass.
// After the backward pass: the step's loss and metric join the last bucket
// (two floats after the gradients), the remaining sums are waited for, and
// a STEP with wire::kUpdateOnly has each worker read the sums back and
// update.
//
// A replica's micro-batches carry the step's whole batch as batch_total, so
// each gradient and loss is already its share of the step's mean: the sum
// over the replicas is the step's gradient.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "coordinator/run/worker_group.h"
#include "core/graph/graph.h"
#include "transport/shm_segment.h"

namespace devmap {

class GradientExchange {
 public:
  // Starts summing `count` floats at `data` across the replicas, in place,
  // with the same bits on every replica; the returned function moves the
  // sum on and is true once it is done. Every replica starts its sums in
  // the same order.
  using StartSum = std::function<std::function<bool()>(float* data, size_t count)>;

  // Lays out the trained parameters of `graph` (each on its op's device),
  // creates the segment `segment_name` and has every worker of `group` map it.
  GradientExchange(WorkerGroup& group, const Graph& graph, const std::string& segment_name, int64_t bucket_bytes,
                   StartSum start_sum);

  // Before the step's last micro-batch is sent (with wire::kSendGradients):
  // from then on, collect() starts each bucket's sum once its gradients are
  // in. After it is collected, finish() completes the sums, adds `result`'s
  // loss and metric over the replicas, and has every worker update.
  void begin(int64_t step);
  void finish(int64_t step, StepResult& result);

  size_t bucket_count() const { return buckets_.size(); }

  // A trained parameter's gradient in the segment.
  struct Entry {
    std::string name, device;      // "conv1.weight.grad"
    size_t offset = 0, count = 0;  // in floats
  };
  // The trained parameters' gradients of `graph`, in the order the backward
  // pass makes them.
  static std::vector<Entry> layout(const Graph& graph);
  // Buckets of `entries` (a layout): consecutive gradients, each bucket
  // closed once it holds `bucket_bytes`. A bucket's entries are [first,
  // end); its floats [offset, offset + count) of the segment.
  struct Span {
    size_t first = 0, end = 0;
    size_t offset = 0, count = 0;
  };
  static std::vector<Span> buckets(const std::vector<Entry>& entries, int64_t bucket_bytes);

 private:
  struct Bucket {
    Span span;
    size_t ready = 0;           // of its entries in the segment this step
    std::function<bool()> sum;  // its sum in flight; empty: not started or done
    int64_t started_ns = 0;
  };
  void on_gradient(const std::string& device, uint32_t entry);
  void start_ready_buckets();
  // Moves the sums in flight on; whether any is still in flight.
  bool progress();
  void ended(Bucket& b);

  WorkerGroup& group_;
  std::vector<Entry> entries_;
  std::map<std::string, std::vector<size_t>> by_device_;  // device -> its PARAMS_IO entries' indices in entries_
  std::vector<size_t> bucket_of_;                         // entry -> bucket
  std::vector<Bucket> buckets_;
  size_t next_bucket_ = 0;              // the next to start, this step
  static constexpr size_t kTotals = 2;  // the loss and the metric, after the gradients
  size_t floats_ = 0;                   // of the gradients
  bool totals_in_ = false;              // this step's loss and metric are in the segment
  ShmSegment segment_;
  StartSum start_sum_;
  int64_t step_ = -1;
};

}  // namespace devmap
