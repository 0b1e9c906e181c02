#include "coordinator/run/worker_group.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "coordinator/run/host_stages.h"
#include "core/base/error.h"
#include "transport/step_report.h"

namespace devmap {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kWatchdogSuffix = "/watchdog";

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

double since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

}  // namespace

struct WorkerGroup::Worker {
  WorkerLaunch launch;
  std::unique_ptr<WorkerProcess> process;
  bool connected = false;
  bool ready = false;
  Clock::time_point phase_since;  // start-up: spawned, or sent its PLAN
  size_t steps_unanswered = 0;    // steps sent that it has not answered yet
  // The step or request in flight: since when, and how long it may take.
  bool busy = false;
  Clock::time_point busy_since;
  double deadline_seconds = 0;
  // The watchdog's last word, and when instructions last advanced.
  bool heard = false;
  Clock::time_point last_heartbeat;
  wire::Heartbeat heartbeat{};
  Clock::time_point last_progress;
  const std::string& device() const { return launch.plan.device; }
};

WorkerGroup::WorkerGroup(RunResources& run, std::vector<WorkerLaunch> launches, FaultPolicy policy,
                         std::function<bool()> abort)
    : run_(run), policy_(policy), abort_(std::move(abort)), ctx_(1) {
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
  throw WorkerFailed(who + " failed: " + reason);
}

void WorkerGroup::mark_pending(Worker& w, double expected_seconds) {
  const double timeout = std::chrono::duration<double>(policy_.step_timeout).count();
  w.busy = true;
  w.busy_since = Clock::now();
  w.deadline_seconds = std::max(timeout, policy_.factor * expected_seconds);
}

void WorkerGroup::send_to(Worker& w, const std::string& frame, const std::string& what) {
  try {
    server_->send(w.device(), frame);
  } catch (const Error& e) {
    // The worker's connection is gone: it died (say how), or it will.
    auto deadline = Clock::now() + milliseconds(500);
    while (!w.process->poll_exit() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
    if (auto exit = w.process->poll_exit()) fail_worker(w, *exit + " before the coordinator could send it " + what);
    fail_worker(w, std::string("cannot be reached to send it ") + what + ": " + e.what());
  }
}

PeerMessage WorkerGroup::await(const std::string& waiting_for) {
  auto last_watch = Clock::now();
  for (;;) {
    // A relay's tensors and the side work's sums move only while they are
    // pumped (MPI progresses inside its calls): they are polled every
    // kMpiPollInterval.
    const bool relaying = relay_ && relay_->pump();
    const bool side_busy = side_.progress && side_.progress();
    const bool polling = relaying || side_busy;
    auto m = server_->recv(milliseconds(polling ? 0 : 50));
    if (!m && polling) std::this_thread::sleep_for(kMpiPollInterval);
    if (m && m->peer.ends_with(kWatchdogSuffix)) {
      if (m->message.type != wire::MsgType::kHeartbeat) continue;
      Worker& w = by_peer(m->peer.substr(0, m->peer.size() - kWatchdogSuffix.size()));
      auto hb = m->message.as<wire::Heartbeat>();
      auto now = Clock::now();
      if (!w.heard || hb.instructions != w.heartbeat.instructions) w.last_progress = now;
      w.heard = true;
      w.last_heartbeat = now;
      w.heartbeat = hb;
      m.reset();
    }
    if (m) {
      if (m->message.type == wire::MsgType::kError) fail_worker(by_peer(m->peer), m->message.body);
      return *std::move(m);
    }
    if (Clock::now() - last_watch >= milliseconds(50)) {
      watch(waiting_for);
      last_watch = Clock::now();
    }
  }
}

void WorkerGroup::watch(const std::string& waiting_for) {
  if (abort_ && abort_()) throw_runtime("aborted while waiting for " + waiting_for);
  for (auto& w : workers_) {
    if (auto exit = w->process->poll_exit()) {
      // A worker that failed sends ERROR before exiting: prefer its words.
      while (auto m = server_->recv(milliseconds(100)))
        if (m->message.type == wire::MsgType::kError) fail_worker(by_peer(m->peer), m->message.body);
      fail_worker(*w, *exit + " while the coordinator was waiting for " + waiting_for);
    }
  }
  const auto now = Clock::now();
  if (start_timeout_.count() > 0) {
    const double limit = std::chrono::duration<double>(start_timeout_).count();
    for (auto& w : workers_)
      if (!w->ready && since(w->phase_since, now) > limit)
        fail_worker(*w, std::string(w->connected ? "did not answer its plan (PLAN) with READY"
                                                 : "did not say HELLO after it was spawned") +
                            " within " + seconds(limit) +
                            " (faults.startup_timeout): it hangs in its start-up; killed it");
  }
  const double silence_limit = std::chrono::duration<double>(policy_.heartbeat_timeout).count();
  for (auto& w : workers_) {
    if (!w->ready || !w->heard) continue;
    if (double silent = since(w->last_heartbeat, now); silent > silence_limit)
      fail_worker(*w, "sent no heartbeat for " + seconds(silent) + " (faults.heartbeat_timeout " +
                          seconds(silence_limit) + "): it is stopped or cut off; killed it");
  }
  auto activity = [](const Worker& w) {
    return w.heard ? wire::read_name(w.heartbeat.activity) : std::string("no heartbeat yet");
  };
  auto waiting = [&](const Worker& w) {
    std::string a = activity(w);
    return a.rfind("recv ", 0) == 0 || a.rfind("send ", 0) == 0;
  };
  // A step progresses while any worker finishes instructions: one slow
  // worker keeps going, and those that wait for its tensors in recv or send
  // are not stuck either. Each busy worker's deadline runs from the later
  // of its request and the group's last finished instruction.
  Clock::time_point group_progress{};
  for (auto& w : workers_) group_progress = std::max(group_progress, w->last_progress);
  auto stalled_since = [&](const Worker& w) { return std::max(w.busy_since, group_progress); };
  std::vector<Worker*> overdue;
  for (auto& w : workers_)
    if (w->busy && since(stalled_since(*w), now) > w->deadline_seconds) overdue.push_back(w.get());
  if (overdue.empty()) return;
  // Of the workers past their deadline, blame a silent watchdog (a stopped
  // process) first, then one busy in a kernel, and last one blocked in send
  // or recv: that one is the victim of the peer it waits on.
  auto rank = [&](const Worker& w) {
    bool silent = !w.heard || since(w.last_heartbeat, now) > 3e-3 * wire::kHeartbeatPeriodMs;
    return silent ? 0 : waiting(w) ? 2 : 1;
  };
  Worker* hung = overdue.front();
  for (Worker* w : overdue)
    if (rank(*w) < rank(*hung)) hung = w;
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", policy_.factor);
  std::string what = "made no progress on " + waiting_for + " for " + seconds(since(stalled_since(*hung), now)) +
                     " (no worker finished an instruction; limit " + seconds(hung->deadline_seconds) +
                     ": the larger of faults.step_timeout " +
                     seconds(std::chrono::duration<double>(policy_.step_timeout).count()) + " and " + factor +
                     "x the expected time)";
  if (hung->heard)
    what += "; its last heartbeat, " + seconds(since(hung->last_heartbeat, now)) + " ago, said it was in " +
            activity(*hung) + " and no instruction had finished for " + seconds(since(hung->last_progress, now));
  std::string others;
  for (Worker* w : overdue)
    if (w != hung) others += "; " + w->device() + " was in " + activity(*w);
  fail_worker(*hung, what + others + "; killed it");
}

void WorkerGroup::start(milliseconds timeout) {
  server_ = std::make_unique<ControlServer>(ctx_, run_.socket_path("control"));
  for (auto& w : workers_) {
    std::string prog = w->launch.program;
    std::string name = prog.substr(prog.find_last_of('/') + 1);
    w->process = std::make_unique<WorkerProcess>(
        prog,
        std::vector<std::string>{"--endpoint", server_->endpoint(), "--device", w->device(), "--coordinator-pid",
                                 std::to_string(::getpid())},
        name + " for " + w->device());
  }
  info_.assign(workers_.size(), WorkerInfo{});
  start_timeout_ = timeout;
  for (auto& w : workers_) w->phase_since = Clock::now();
  size_t ready = 0;
  while (ready < workers_.size()) {
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
      w.phase_since = Clock::now();
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
  start_timeout_ = milliseconds(0);
}

void WorkerGroup::send(const wire::Step& traced_or_not) {
  wire::Step step = traced_or_not;
  if (trace_ && trace_->sent(step)) step.flags |= wire::kTrace;
  const bool training = (step.flags & wire::kTrain) != 0;
  const double planned = policy_.planned_seconds ? policy_.planned_seconds(step.batch, training) : 0;
  InFlight f;
  f.step = step;
  f.expected_seconds = slowness_ > 0 ? planned * slowness_ : planned;
  f.answered.assign(workers_.size(), false);
  f.pending = workers_.size();
  for (auto& w : workers_) {
    send_to(*w, wire::frame(wire::MsgType::kStep, step), "step " + std::to_string(step.step + 1));
    // A worker still on an earlier step starts its clock when it answers that one.
    if (w->steps_unanswered++ == 0) mark_pending(*w, f.expected_seconds);
  }
  f.sent = Clock::now();
  in_flight_.push_back(std::move(f));
}

WorkerGroup::InFlight* WorkerGroup::oldest_unanswered(size_t worker) {
  for (InFlight& f : in_flight_)
    if (!f.answered[worker]) return &f;
  return nullptr;
}

void WorkerGroup::take_step_done(size_t index, const wire::Message& message) {
  Worker& w = *workers_[index];
  InFlight* f = message.type == wire::MsgType::kStepDone ? oldest_unanswered(index) : nullptr;
  if (!f) fail_worker(w, std::string("sent an unexpected ") + wire::msg_type_name(message.type));
  wire::StepReport report;
  try {
    report = wire::decode_step_done(message);
  } catch (const Error& e) {
    fail_worker(w, std::string("sent a malformed STEP_DONE: ") + e.what());
  }
  const wire::StepDone& done = report.done;
  // A worker answers its steps in the order they were sent.
  if (done.step != f->step.step)
    fail_worker(w, "answered step " + std::to_string(done.step) + " instead of " + std::to_string(f->step.step));
  if (done.trace_bytes > 0 && !(trace_ && (f->step.flags & wire::kTrace)))
    fail_worker(w, "sent trace events that were not asked for");
  if (done.trace_bytes > 0) trace_->add_worker(w.device(), f->step, std::move(report.trace));
  f->answered[index] = true;
  --f->pending;
  w.busy = false;
  if (--w.steps_unanswered > 0) mark_pending(w, oldest_unanswered(index)->expected_seconds);
  if (policy_.planned_seconds) {
    double planned = policy_.planned_seconds(f->step.batch, (f->step.flags & wire::kTrain) != 0);
    if (planned > 0) slowness_ = std::max(slowness_, done.compute_seconds / planned);
  }
  StepResult& result = f->result;
  result.loss += done.loss;
  result.metric += done.metric;
  result.compute_seconds = std::max(result.compute_seconds, done.compute_seconds);
  busy_.add_work(w.device(), done.compute_seconds, done.wait_seconds);
  result.param_stats.insert(result.param_stats.end(), report.param_stats.begin(), report.param_stats.end());
  if (result.micro.size() < report.micro.size()) result.micro.resize(report.micro.size());
  for (size_t i = 0; i < report.micro.size(); ++i) {
    result.micro[i].loss += report.micro[i].loss;
    result.micro[i].metric += report.micro[i].metric;
  }
}

StepResult WorkerGroup::collect() {
  if (in_flight_.empty()) throw_runtime("internal: collect() with no step in flight");
  const int64_t wait_from = trace_ ? trace_now_ns() : 0;
  while (in_flight_.front().pending > 0) {
    const wire::Step& step = in_flight_.front().step;
    // Numbered from 1, as the progress bar and the metrics count.
    PeerMessage m = await(((step.flags & wire::kTrain) ? "step " : "batch ") + std::to_string(step.step + 1));
    if (m.message.type == wire::MsgType::kGradientReady && side_.on_gradient) {
      side_.on_gradient(workers_[index_of(m.peer)]->device(), m.message.as<wire::GradientReady>());
      continue;
    }
    take_step_done(index_of(m.peer), m.message);
  }
  InFlight f = std::move(in_flight_.front());
  in_flight_.pop_front();
  // Run time counts once where steps overlap: from this step's send or the
  // previous collect, whichever is later.
  const Clock::time_point now = Clock::now();
  busy_.add_step(std::chrono::duration<double>(now - std::max(f.sent, last_collected_)).count());
  last_collected_ = now;
  if (trace_ && (f.step.flags & wire::kTrace)) trace_->add_coordinator("wait", wait_from, trace_now_ns(), f.step);
  if (hosts_)
    hosts_->combine(f.result, [this] {
      if (relay_) relay_->pump();
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // the other hosts' steps take milliseconds
    });
  return std::move(f.result);
}

void WorkerGroup::request(const std::map<std::string, std::string>& frame_by_device, wire::MsgType reply,
                          const std::string& what, double expected_seconds) {
  if (!in_flight_.empty()) throw_runtime("internal: " + what + " while steps are in flight");
  for (const auto& [device, frame] : frame_by_device) {
    send_to(by_peer(device), frame, what);
    mark_pending(by_peer(device), expected_seconds);
  }
  size_t pending = frame_by_device.size();
  while (pending > 0) {
    PeerMessage m = await(what);
    Worker& w = by_peer(m.peer);
    if (m.message.type != reply || !frame_by_device.count(m.peer))
      fail_worker(w, std::string("sent an unexpected ") + wire::msg_type_name(m.message.type) + " during " + what);
    w.busy = false;
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
      info_[i].threads = bye.threads;
      info_[i].peak_flops_per_core = bye.peak_flops_per_core;
    }
    ++byes;
  }
  for (auto& w : workers_)
    if (w->process) w->process->stop(2000);
}

}  // namespace devmap
