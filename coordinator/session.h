// Session: everything a job holds while its workers run: the run's names
// and directory, the input segment, one segment per cut edge, and the
// worker processes (one per device that runs an op). Destroying it kills
// what still runs and removes every segment and socket file, on every exit
// path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coordinator/config.h"
#include "coordinator/run_options.h"
#include "coordinator/run_resources.h"
#include "coordinator/worker_group.h"
#include "core/partition.h"
#include "transport/shm_segment.h"

namespace devmap {

class Session {
 public:
  // Plans the job over `graph` (the config's, or one with ops added for the
  // job): a training program, or an inference program computing `outputs`;
  // then the partition and segment sizes. Creates the segments; start()
  // launches the workers.
  Session(const Config& config, const RunOptions& options, Graph graph, bool training, std::vector<int> outputs,
          int64_t max_batch);
  void start();

  const Graph& graph() const { return graph_; }
  const Partition& partition() const { return partition_; }
  const InputLayout& layout() const { return layout_; }
  const InputLayout& output_layout() const { return output_layout_; }
  ShmSegment& input() { return input_; }
  ShmSegment* output() { return output_.get(); }
  WorkerGroup& workers() { return *group_; }
  const RunResources& run() const { return run_; }

 private:
  bool swept_;  // leftovers of crashed runs are removed first
  RunResources run_;
  Graph graph_;
  Program program_;
  Partition partition_;
  InputLayout layout_, output_layout_;
  ShmSegment input_;
  std::unique_ptr<ShmSegment> output_;
  std::vector<ShmSegment> edge_segments_;
  std::unique_ptr<WorkerGroup> group_;
};

// Checks that every device the partition uses can run here; warns on
// stderr when the workers' threads add up to more than the machine's cores.
void check_devices(const Config& config, const Partition& partition);

// Prints where each op runs and what crosses devices (--log-placement).
void log_placement(const Config& config, const Partition& partition, int64_t batch, std::ostream& os);

}  // namespace devmap
