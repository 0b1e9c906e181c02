// Session: everything a job holds while its workers run: the run's names
// and directory, the input segment, one segment per cut edge, and the
// worker processes (one per device that runs an op). Destroying it kills
// what still runs and removes every segment and socket file, on every exit
// path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/plan/job_memory.h"
#include "coordinator/plan/job_plan.h"
#include "coordinator/run/run_resources.h"
#include "coordinator/run/worker_group.h"
#include "core/plan/partition.h"
#include "transport/shm_segment.h"

namespace devmap {

class EdgeRelay;
class HostStages;

// What a session runs (a JobShape), and where.
struct SessionJob : JobShape {
  // A job whose devices span hosts: this rank's part (host_stages.h); the
  // session then runs this host's devices only. Null: every device here.
  const HostStages* hosts = nullptr;

  static SessionJob train(int64_t batch, int64_t eval_batch = 0, const HostStages* hosts = nullptr) {
    SessionJob j;
    j.training = true;
    j.batch = batch;
    j.eval_batch = eval_batch;
    j.hosts = hosts;
    return j;
  }
  static SessionJob infer(std::vector<int> outputs, int64_t batch, const HostStages* hosts = nullptr) {
    SessionJob j;
    j.outputs = std::move(outputs);
    j.batch = batch;
    j.hosts = hosts;
    return j;
  }
};

class Session {
 public:
  // Removes what crashed runs left, then plans the job over `graph` (the
  // config's, or one with ops added for the job: a JobPlan) and the segment
  // sizes. Creates the segments (and, across hosts, the relay);
  // start() launches the workers. Throws devmap::Error before creating
  // anything when a budget cannot be met.
  Session(const Config& config, const RunOptions& options, Graph graph, SessionJob job);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  void start();

  const JobPlan& plan() const { return plan_; }
  const JobMemory& memory() const { return plan_.memory; }

  const Graph& graph() const { return plan_.graph; }
  const Partition& partition() const { return plan_.partition; }
  const InputLayout& layout() const { return layout_; }
  const InputLayout& output_layout() const { return output_layout_; }
  ShmSegment& input() { return input_; }
  ShmSegment* output() { return output_.get(); }
  WorkerGroup& workers() { return *group_; }
  const RunResources& run() const { return run_; }

 private:
  // The input segment's layout, once the shared memory the plan needs is
  // known to be there.
  static InputLayout checked_input_layout(const JobPlan& plan, const std::string& config_path);

  RunResources run_;
  JobPlan plan_;
  InputLayout layout_, output_layout_;
  ShmSegment input_;
  std::unique_ptr<ShmSegment> output_;
  std::vector<ShmSegment> edge_segments_;
  std::unique_ptr<EdgeRelay> relay_;  // before group_: the group pumps it
  std::unique_ptr<WorkerGroup> group_;
  std::chrono::milliseconds startup_timeout_{60000};  // faults.startup_timeout
};

// Checks that every device the partition uses can run here; warns on
// stderr when the workers' threads add up to more than the machine's cores.
// `hosts`: only this host's devices count (null: all).
void check_devices(const Config& config, const Partition& partition, const HostStages* hosts = nullptr);

// Warns on `os` about the ops placed apart from every op they exchange
// tensors with (round_trips_report.h), at `batch` samples a step.
void warn_round_trips(const Config& config, const Session& session, int64_t batch, std::ostream& os);

// Prints where each op runs and what crosses devices (--log-placement).
void log_placement(const Config& config, const Partition& partition, int64_t batch, std::ostream& os);

}  // namespace devmap
