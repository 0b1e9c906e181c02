#include "worker/watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "transport/control_channel.h"
#include "transport/run_cleanup.h"

namespace devmap {

Watchdog::Watchdog(zmq::context_t& ctx, std::string endpoint, std::string device, pid_t coordinator,
                   std::string run_prefix, std::string run_dir)
    : ctx_(ctx),
      endpoint_(std::move(endpoint)),
      device_(std::move(device)),
      coordinator_(coordinator),
      run_prefix_(std::move(run_prefix)),
      run_dir_(std::move(run_dir)),
      thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  stop_.store(true);
  thread_.join();
}

void Watchdog::loop() {
  // Its own socket: ZeroMQ sockets belong to one thread. Without one the
  // watchdog still watches the coordinator.
  std::unique_ptr<ControlClient> client;
  try {
    client = std::make_unique<ControlClient>(ctx_, endpoint_, device_ + "/watchdog", /*linger_ms=*/0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: watchdog sends no heartbeats: %s\n", device_.c_str(), e.what());
  }
  while (!stop_.load()) {
    if (::getppid() != coordinator_) {
      // The main thread may be blocked anywhere; nothing here waits for it.
      std::fprintf(stderr, "%s: the coordinator (pid %d) is gone: removing the run's files and exiting\n",
                   device_.c_str(), static_cast<int>(coordinator_));
      remove_run_files(run_prefix_, run_dir_);
      ::_exit(1);
    }
    wire::Heartbeat hb{};
    hb.step = step_.load();
    const Executor* exec = exec_.load();
    if (exec) {
      Executor::Progress p = exec->progress();
      hb.instructions = p.finished;
      wire::copy_name(hb.activity, exec->describe(p));
    } else {
      wire::copy_name(hb.activity, "setting up");
    }
    try {
      if (client) (void)client->try_send(wire::frame(wire::MsgType::kHeartbeat, hb));
    } catch (const zmq::error_t&) {
      // A heartbeat that cannot go is dropped; the parent check decides.
    }
    for (int i = 0; i < wire::kHeartbeatPeriodMs / 20 && !stop_.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace devmap
