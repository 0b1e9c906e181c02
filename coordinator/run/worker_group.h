// WorkerGroup: the coordinator's side of its worker processes. It spawns
// one worker per device, runs the handshake (HELLO with protocol version,
// PLAN, READY), sends steps and collects their results. While it waits it
// watches every child, every 50 ms:
//  - a worker that reports an ERROR or whose process ends fails at once;
//  - a worker whose watchdog sends no heartbeat for heartbeat_timeout is
//    unresponsive (stopped, or cut off);
//  - a worker that has not answered the step or request in flight while no
//    worker of the group has finished an instruction for max(step_timeout,
//    factor x expected time) is hung, even when its heartbeats still come
//    (a kernel that never returns); a slow worker whose instructions keep
//    finishing, and the workers that wait for its tensors, are not. A
//    step's expected time is the plan's pessimistic estimate for its batch
//    until a step has been measured; from then on that estimate scaled by
//    the slowest measured/estimated ratio so far. So a long but healthy
//    micro-batch is not killed, and a hang is found soon after the first
//    step.
// Each ends the wait with WorkerFailed naming the worker, its device, its
// pid and what it was doing; the caller unwinds, which kills and reaps the
// rest.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/run/run_resources.h"
#include "coordinator/run/step_result.h"
#include "coordinator/run/worker_process.h"
#include "coordinator/telemetry/device_busy.h"
#include "coordinator/telemetry/trace_log.h"
#include "core/exec/worker_plan.h"
#include "transport/control_channel.h"

namespace devmap {

// How often a coordinator tests the MPI messages it has in flight (a
// relay's tensors, gradient sums) while it waits: MPI moves bytes only
// inside its calls, and between tests the coordinator sleeps, leaving the
// cores to its workers.
inline constexpr std::chrono::microseconds kMpiPollInterval{100};

class EdgeRelay;
class HostStages;

struct WorkerLaunch {
  std::string program;  // path of worker_cpu / worker_gpu
  WorkerPlan plan;
};

// A worker died, hung, went silent or reported an error: the run can go on
// only with new workers (train.max_restarts).
class WorkerFailed : public Error {
 public:
  explicit WorkerFailed(std::string message) : Error(ErrorKind::kRuntime, std::move(message)) {}
};

// When a worker counts as failed; see the class comment.
struct FaultPolicy {
  std::chrono::milliseconds step_timeout{30000};
  std::chrono::milliseconds heartbeat_timeout{10000};
  double factor = 10;
  // The plan's estimate for a batch on the slowest device (null: none).
  std::function<double(int64_t batch, bool training)> planned_seconds;
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
  uint32_t threads = 0;
  double peak_flops_per_core = 0;  // measured FP32 peak of one core (CPU workers, --profile), 0: none
};

class WorkerGroup {
 public:
  // `abort` is polled while waiting; when it returns true the wait throws
  // Error("aborted ...").
  WorkerGroup(RunResources& run, std::vector<WorkerLaunch> launches, FaultPolicy policy, std::function<bool()> abort);
  ~WorkerGroup();

  // Spawns every worker and completes the handshake; a worker that has not
  // sent HELLO `timeout` after its spawn, or READY `timeout` after its PLAN,
  // fails the start naming its device and that phase.
  void start(std::chrono::milliseconds timeout);
  const std::vector<WorkerInfo>& workers() const { return info_; }

  // Sends `step` to every worker. Several steps may be in flight (a
  // prediction's rounds overlap, so a device starts the next round while
  // later devices finish this one); each worker answers its steps in the
  // order they were sent. collect() waits for every result of the oldest
  // step in flight and returns it.
  void send(const wire::Step& step);
  StepResult collect();
  size_t steps_in_flight() const { return in_flight_.size(); }
  // Each device's busy time over the steps collected so far.
  const DeviceBusy& busy() const { return busy_; }
  // Records the steps `trace` covers (--trace): send() asks the workers for
  // their timeline, collect() hands it over with the coordinator's wait.
  // Null: none (the default).
  void set_trace(TraceLog* trace) { trace_ = trace; }
  TraceLog* trace() const { return trace_; }

  // What a data-parallel step does while collect() waits: on_gradient takes
  // each GRADIENT_READY (the sending device, its body); progress is called
  // before each wait for a message and says whether it has work in flight
  // (then the wait lasts at most a millisecond). Set for the steps
  // that send gradients; cleared (the default) a GRADIENT_READY is an error.
  struct SideWork {
    std::function<void(const std::string& device, const wire::GradientReady&)> on_gradient;
    std::function<bool()> progress;
  };
  void set_side_work(SideWork work) { side_ = std::move(work); }

  // A job whose devices span hosts (host_stages.h): this group runs this
  // host's workers; `relay` (null: no edge crosses to this host) is pumped
  // while the group waits, and each collected step's result is combined
  // with the other hosts' (HostStages::combine) before collect() returns it.
  void set_hosts(const HostStages* hosts, EdgeRelay* relay) {
    hosts_ = hosts;
    relay_ = relay;
  }
  const HostStages* hosts() const { return hosts_; }

  // Sends each listed worker its frame and waits until each has answered
  // with `reply` (a worker's ERROR or death ends the wait with an Error);
  // `expected_seconds` is how long the work should take (file I/O).
  void request(const std::map<std::string, std::string>& frame_by_device, wire::MsgType reply, const std::string& what,
               double expected_seconds = 0);

  // Asks every worker to exit, collects its BYE (peak memory) and reaps it;
  // a worker that does not exit in time is killed.
  void shutdown();

 private:
  struct Worker;
  PeerMessage await(const std::string& waiting_for);
  void watch(const std::string& waiting_for);  // exits, heartbeats, deadlines
  void send_to(Worker& w, const std::string& frame, const std::string& what);
  void mark_pending(Worker& w, double expected_seconds);
  [[noreturn]] void fail_worker(Worker& w, const std::string& reason);
  size_t index_of(const std::string& peer) const;  // throws for an unknown peer
  Worker& by_peer(const std::string& peer);
  // A step sent and not yet collected.
  struct InFlight {
    wire::Step step{};
    std::chrono::steady_clock::time_point sent;
    double expected_seconds = 0;  // how long a worker's share should take
    std::vector<bool> answered;   // by worker index
    size_t pending = 0;           // workers yet to answer
    StepResult result;            // what the answers so far add up to
  };
  InFlight* oldest_unanswered(size_t worker);  // null: it has answered every step sent
  // Adds worker `index`'s STEP_DONE to the step it answers; fails the
  // worker for anything else.
  void take_step_done(size_t index, const wire::Message& message);

  RunResources& run_;
  FaultPolicy policy_;
  std::function<bool()> abort_;
  double slowness_ = 0;             // the largest measured / planned time of a step so far (0: none measured)
  std::deque<InFlight> in_flight_;  // oldest first
  std::chrono::steady_clock::time_point last_collected_;  // when collect() last returned
  SideWork side_;
  const HostStages* hosts_ = nullptr;
  EdgeRelay* relay_ = nullptr;
  DeviceBusy busy_;
  TraceLog* trace_ = nullptr;
  zmq::context_t ctx_;
  std::unique_ptr<ControlServer> server_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<WorkerInfo> info_;
  std::chrono::milliseconds start_timeout_{0};  // while start() runs: each phase's limit
};

}  // namespace devmap
