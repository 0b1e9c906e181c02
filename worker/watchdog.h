// A worker's watchdog thread. Every wire::kHeartbeatPeriodMs (200 ms) it
//  - sends a HEARTBEAT on a control socket of its own (identity
//    "<device>/watchdog"): the step in progress and the executor's
//    instruction count and activity, so the coordinator can tell a live
//    worker stuck in one kernel from one that makes progress;
//  - checks that the coordinator (its parent) still lives. When the
//    coordinator is gone, even killed with SIGKILL, the watchdog removes the
//    run's shared-memory segments and socket directory and ends the process
//    at once: no worker outlives its coordinator by more than a poll period.
// The main thread may be stuck in a kernel or a wait; the watchdog runs
// regardless.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "core/exec/executor.h"

namespace devmap {

class Watchdog {
 public:
  Watchdog(zmq::context_t& ctx, std::string endpoint, std::string device, pid_t coordinator, std::string run_prefix,
           std::string run_dir);
  ~Watchdog();  // stops and joins the thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The executor whose progress heartbeats report (once it exists).
  void watch(const Executor* exec) { exec_.store(exec); }
  // The step the main thread runs now; -1 between steps.
  void set_step(int64_t step) { step_.store(step); }

 private:
  void loop();

  zmq::context_t& ctx_;
  std::string endpoint_, device_;
  pid_t coordinator_;
  std::string run_prefix_, run_dir_;
  std::atomic<const Executor*> exec_{nullptr};
  std::atomic<int64_t> step_{-1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace devmap
