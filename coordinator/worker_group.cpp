#include "coordinator/worker_group.h"

#include <cstring>

#include "core/error.h"

namespace devmap {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct WorkerGroup::Worker {
  WorkerLaunch launch;
  std::unique_ptr<WorkerProcess> process;
  bool connected = false;
  bool ready = false;
  bool result_pending = false;
  const std::string& device() const { return launch.plan.device; }
};

WorkerGroup::WorkerGroup(RunResources& run, std::vector<WorkerLaunch> launches, std::function<bool()> interrupted)
    : run_(run), interrupted_(std::move(interrupted)), ctx_(1) {
  for (auto& l : launches) {
    auto w = std::make_unique<Worker>();
    w->launch = std::move(l);
    workers_.push_back(std::move(w));
  }
}

WorkerGroup::~WorkerGroup() {
  // Kill whatever still runs (error paths); shutdown() has reaped the rest.
  for (auto& w : workers_) w->process.reset();
  server_.reset();
}

size_t WorkerGroup::index_of(const std::string& peer) const {
  for (size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i]->device() == peer) return i;
  throw_runtime("message from unknown peer '" + peer + "'");
}

WorkerGroup::Worker& WorkerGroup::by_peer(const std::string& peer) {
  return *workers_[index_of(peer)];
}

void WorkerGroup::fail_worker(Worker& w, const std::string& reason) {
  std::string who = w.process ? w.process->label() + " (pid " + std::to_string(w.process->pid()) + ")" : w.device();
  throw_runtime(who + " failed: " + reason);
}

PeerMessage WorkerGroup::await(const std::string& waiting_for) {
  for (;;) {
    if (auto m = server_->recv(milliseconds(50))) {
      if (m->message.type == wire::MsgType::kError) fail_worker(by_peer(m->peer), m->message.body);
      return *std::move(m);
    }
    if (interrupted_ && interrupted_()) throw_runtime("interrupted while waiting for " + waiting_for);
    for (auto& w : workers_) {
      if (auto exit = w->process->poll_exit()) {
        // A worker that failed sends ERROR before exiting: prefer its words.
        while (auto m = server_->recv(milliseconds(100)))
          if (m->message.type == wire::MsgType::kError) fail_worker(by_peer(m->peer), m->message.body);
        fail_worker(*w, *exit + " while the coordinator was waiting for " + waiting_for);
      }
    }
  }
}

void WorkerGroup::start(milliseconds timeout) {
  server_ = std::make_unique<ControlServer>(ctx_, run_.socket_path("control"));
  for (auto& w : workers_) {
    std::string prog = w->launch.program;
    std::string name = prog.substr(prog.find_last_of('/') + 1);
    w->process = std::make_unique<WorkerProcess>(
        prog, std::vector<std::string>{"--endpoint", server_->endpoint(), "--device", w->device()},
        name + " for " + w->device());
  }
  info_.assign(workers_.size(), WorkerInfo{});
  auto deadline = Clock::now() + timeout;
  size_t ready = 0;
  while (ready < workers_.size()) {
    if (Clock::now() > deadline)
      throw_runtime("workers did not become ready within " + std::to_string(timeout.count()) + " ms");
    PeerMessage m = await("workers to start");
    const size_t idx = index_of(m.peer);
    Worker& w = *workers_[idx];
    if (m.message.type == wire::MsgType::kHello) {
      auto hello = m.message.as<wire::Hello>();
      if (hello.protocol_version != wire::kProtocolVersion) {
        std::string why = "speaks protocol version " + std::to_string(hello.protocol_version) +
                          ", the coordinator speaks " + std::to_string(wire::kProtocolVersion) +
                          " (rebuild so both come from the same source)";
        server_->send(m.peer, wire::frame(wire::MsgType::kError, std::string_view(why)));
        fail_worker(w, why);
      }
      w.connected = true;
      info_[idx].device = w.device();
      info_[idx].pid = hello.pid;
      server_->send(m.peer, wire::frame(wire::MsgType::kPlan, std::string_view(encode_worker_plan(w.launch.plan))));
    } else if (m.message.type == wire::MsgType::kReady && w.connected && !w.ready) {
      auto r = m.message.as<wire::Ready>();
      info_[idx].param_count = r.param_count;
      info_[idx].runtime = wire::read_name(r.runtime);
      w.ready = true;
      ++ready;
    } else {
      fail_worker(w, std::string("sent ") + wire::msg_type_name(m.message.type) + " during the handshake");
    }
  }
}

void WorkerGroup::send(const wire::Step& step) {
  for (auto& w : workers_) {
    server_->send(w->device(), wire::frame(wire::MsgType::kStep, step));
    w->result_pending = true;
  }
  pending_step_ = step.step;
}

StepResult WorkerGroup::collect() {
  StepResult result;
  size_t pending = workers_.size();
  while (pending > 0) {
    PeerMessage m = await("step " + std::to_string(pending_step_));
    Worker& w = by_peer(m.peer);
    if (m.message.type != wire::MsgType::kStepDone || !w.result_pending)
      fail_worker(w, std::string("sent an unexpected ") + wire::msg_type_name(m.message.type));
    auto done = m.message.as<wire::StepDone>(/*allow_tail=*/true);
    if (done.step != pending_step_)
      fail_worker(w, "answered step " + std::to_string(done.step) + " instead of " + std::to_string(pending_step_));
    wire::check_body_size(m.message, sizeof done + done.param_stats * sizeof(wire::ParamStat), false);
    w.result_pending = false;
    --pending;
    result.loss += done.loss;
    result.metric += done.metric;
    result.compute_seconds = std::max(result.compute_seconds, done.compute_seconds);
    for (uint32_t i = 0; i < done.param_stats; ++i) {
      wire::ParamStat st;
      std::memcpy(&st, m.message.body.data() + sizeof done + i * sizeof st, sizeof st);
      result.param_stats.push_back(st);
    }
  }
  return result;
}

void WorkerGroup::request(const std::map<std::string, std::string>& frame_by_device, wire::MsgType reply,
                          const std::string& what) {
  for (const auto& [device, frame] : frame_by_device) server_->send(device, frame);
  size_t pending = frame_by_device.size();
  while (pending > 0) {
    PeerMessage m = await(what);
    Worker& w = by_peer(m.peer);
    if (m.message.type != reply || !frame_by_device.count(m.peer))
      fail_worker(w, std::string("sent an unexpected ") + wire::msg_type_name(m.message.type) + " during " + what);
    --pending;
  }
}

void WorkerGroup::shutdown() {
  if (!server_) return;
  for (auto& w : workers_)
    if (w->process && !w->process->poll_exit()) {
      try {
        server_->send(w->device(), wire::frame(wire::MsgType::kShutdown, std::string_view()));
      } catch (const Error&) {
        // already disconnected: stop() below reaps it
      }
    }
  auto deadline = Clock::now() + milliseconds(5000);
  size_t byes = 0;
  while (byes < workers_.size() && Clock::now() < deadline) {
    auto m = server_->recv(milliseconds(50));
    if (!m || m->message.type != wire::MsgType::kBye) continue;
    {
      const size_t i = index_of(m->peer);
      auto bye = m->message.as<wire::Bye>(/*allow_tail=*/true);
      wire::check_body_size(m->message, sizeof bye + bye.profile_entries * sizeof(wire::ProfileRecord), false);
      for (uint32_t k = 0; k < bye.profile_entries; ++k) {
        wire::ProfileRecord r;
        std::memcpy(&r, m->message.body.data() + sizeof bye + k * sizeof r, sizeof r);
        info_[i].profile.push_back(r);
      }
      info_[i].vm_hwm_bytes = bye.vm_hwm_bytes;
      info_[i].transport_bytes_copied = bye.transport_bytes_copied;
      info_[i].handoffs = bye.handoffs;
      info_[i].bytes_handed = bye.bytes_handed;
      info_[i].memory_peak_bytes = bye.memory_peak_bytes;
      info_[i].memory_limit_bytes = bye.memory_limit_bytes;
    }
    ++byes;
  }
  for (auto& w : workers_)
    if (w->process) w->process->stop(2000);
}

}  // namespace devmap
