// WorkerGroup: the coordinator's side of its worker processes. It spawns
// one worker per device, runs the handshake (HELLO with protocol version,
// PLAN, READY), sends steps and collects their results. While it waits it
// watches every child: a worker that reports an ERROR or dies ends the run
// with an Error naming the worker, its device and its reason.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/run_resources.h"
#include "coordinator/worker_process.h"
#include "core/worker_plan.h"
#include "transport/control_channel.h"

namespace devmap {

struct WorkerLaunch {
  std::string program;  // path of worker_cpu / worker_gpu
  WorkerPlan plan;
};

struct StepResult {
  float loss = 0;
  float metric = 0;
  double compute_seconds = 0;  // the slowest worker's
  std::vector<wire::ParamStat> param_stats;
};

struct WorkerInfo {
  std::string device;
  pid_t pid = 0;
  uint64_t param_count = 0;
  std::string runtime;
  // Reported in BYE at shutdown.
  uint64_t vm_hwm_bytes = 0;
  uint64_t transport_bytes_copied = 0;
  uint64_t handoffs = 0, bytes_handed = 0;
  uint64_t memory_peak_bytes = 0, memory_limit_bytes = 0;  // the device allocator's
  std::vector<wire::ProfileRecord> profile;
};

class WorkerGroup {
 public:
  // `interrupted` is polled while waiting; when it returns true the wait
  // throws Error("interrupted").
  WorkerGroup(RunResources& run, std::vector<WorkerLaunch> launches, std::function<bool()> interrupted);
  ~WorkerGroup();

  // Spawns every worker and completes the handshake within `timeout`.
  void start(std::chrono::milliseconds timeout);
  const std::vector<WorkerInfo>& workers() const { return info_; }

  // Sends `step` to every worker; collect() waits for all their results.
  void send(const wire::Step& step);
  StepResult collect();

  // Sends each listed worker its frame and waits until each has answered
  // with `reply` (a worker's ERROR or death ends the wait with an Error).
  void request(const std::map<std::string, std::string>& frame_by_device, wire::MsgType reply, const std::string& what);

  // Asks every worker to exit, collects its BYE (peak memory) and reaps it;
  // a worker that does not exit in time is killed.
  void shutdown();

 private:
  struct Worker;
  PeerMessage await(const std::string& waiting_for);
  [[noreturn]] void fail_worker(Worker& w, const std::string& reason);
  size_t index_of(const std::string& peer) const;  // throws for an unknown peer
  Worker& by_peer(const std::string& peer);

  RunResources& run_;
  std::function<bool()> interrupted_;
  zmq::context_t ctx_;
  std::unique_ptr<ControlServer> server_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<WorkerInfo> info_;
  int64_t pending_step_ = -1;
};

}  // namespace devmap
