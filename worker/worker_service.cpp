#include "worker/worker_service.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "core/base/process_stats.h"
#include "core/exec/executor.h"
#include "core/exec/host_memory.h"
#include "core/exec/worker_plan.h"
#include "core/plan/device_budget.h"
#include "core/plan/memory_plan.h"
#include "transport/control_channel.h"
#include "transport/edge_plan.h"
#include "transport/params_io.h"
#include "transport/shm_segment.h"
#include "transport/step_report.h"
#include "worker/gradient_outlet.h"
#include "worker/watchdog.h"

namespace devmap {
namespace {

using std::chrono::milliseconds;

struct Args {
  std::string endpoint, device;
  pid_t coordinator = 0;  // --coordinator-pid; 0: the parent at start-up
};

void print_usage(const std::string& program, std::ostream& os) {
  os << "usage: " << program << " --endpoint ipc://PATH --device NAME [--coordinator-pid PID]\n"
     << "\n"
     << "A devmap worker process. The coordinator starts one per device; you do\n"
     << "not run it by hand. It connects to the coordinator's control socket,\n"
     << "receives its part of the plan, and runs steps until told to stop.\n"
     << "\n"
     << "  --endpoint ipc://PATH   the coordinator's control socket\n"
     << "  --device NAME           the device this worker serves (cpu:0, gpu:0, ...)\n"
     << "  --coordinator-pid PID   the coordinator: when it is no longer this process's\n"
     << "                          parent (it died, even before this one started), exit\n"
     << "  --describe              print the compute libraries this worker runs on and exit\n"
     << "  --fma-peak              print the measured FP32 peak of one core in FLOP/s (0: not\n"
     << "                          measured for this device kind) and exit\n"
     << "  --help                  this text\n";
}

Args parse_args(int argc, char** argv, const std::string& program) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw_invalid(program + ": " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--endpoint")
      a.endpoint = value();
    else if (arg == "--device")
      a.device = value();
    else if (arg == "--coordinator-pid") {
      const std::string v = value();
      char* end = nullptr;
      const long pid = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || pid <= 0)
        throw_invalid(program + ": --coordinator-pid needs a pid, not '" + v + "'");
      a.coordinator = static_cast<pid_t>(pid);
    } else
      throw_invalid(program + ": unknown option '" + arg + "' (see --help)");
  }
  if (a.endpoint.empty() || a.device.empty())
    throw_invalid(program + ": --endpoint and --device are required (see --help)");
  return a;
}

// Waits for one message from the coordinator; gives up when the parent
// process is gone (the coordinator died) so that no worker is orphaned.
wire::Message await_message(ControlClient& client, pid_t parent) {
  for (;;) {
    if (auto m = client.recv(milliseconds(500))) return *std::move(m);
    if (::getppid() != parent) throw_runtime("the coordinator (pid " + std::to_string(parent) + ") is gone");
  }
}

// Pins every thread of this process (the pool's, OpenBLAS's, ZeroMQ's) to
// `cores`; threads started later inherit the mask of their creator.
void pin_threads(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) CPU_SET(c, &set);
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    if (::sched_setaffinity(tid, sizeof set, &set) != 0)
      throw_runtime("cannot pin the worker to cores " + std::to_string(cores.front()) + "...: " + std::strerror(errno));
  }
}

double l2_norm(const float* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(v[i]) * v[i];
  return std::sqrt(s);
}

class Worker {
 public:
  Worker(zmq::context_t& ctx, const WorkerRuntime& rt, WorkerPlan plan)
      : plan_(std::move(plan)), segment_(ShmSegment::open(plan_.input_segment)) {
    if (segment_.size() < plan_.layout.total_bytes())
      throw_runtime("input segment " + plan_.input_segment + " is smaller than its layout");
    if (!plan_.output_segment.empty()) {
      output_segment_ = std::make_unique<ShmSegment>(ShmSegment::open(plan_.output_segment));
      if (output_segment_->size() < plan_.output_layout.total_bytes())
        throw_runtime("output segment " + plan_.output_segment + " is smaller than its layout");
    }
    rt.set_threads(plan_.threads);
    memory_ = rt.make_memory ? rt.make_memory(plan_.device, plan_.memory_limit)
                             : std::make_unique<HostMemory>(plan_.device, plan_.memory_limit);
    Program program =
        plan_.training ? build_training_program(plan_.graph) : build_inference_program(plan_.graph, plan_.outputs);
    // This device's share: the same pure function the coordinator planned with.
    partition_ = partition_program(plan_.graph, program);
    const DeviceProgram& mine = partition_.program_for(plan_.device);
    // The same pipeline plan as the coordinator's: schedules, buffer sets, ring depths.
    pipeline_ = plan_pipeline(plan_.graph, partition_, plan_.training, plan_.pipeline, plan_.micro_batches, kEdgeSlots);
    device_index_ = static_cast<size_t>(std::find(partition_.devices.begin(), partition_.devices.end(), plan_.device) -
                                        partition_.devices.begin());
    std::vector<ChannelEdge> edges =
        channel_edges(partition_, plan_.run_prefix, plan_.max_batch, plan_.device, pipeline_.edge_slots);
    if (!edges.empty())
      channel_ =
          // No idle hook: the watchdog ends the process if the coordinator goes.
          std::make_unique<ShmChannel>(ctx, plan_.device, data_endpoints(partition_, plan_.run_dir), edges, nullptr);
    if (channel_) {
      for (const ShmChannel::Region& r : channel_->regions()) {
        // A CPU worker's slots are its memory: those it writes count against
        // its budget. A GPU worker pins every slot it copies to or from.
        if (!memory_->host_accessible())
          memory_->register_host(r.data, r.bytes);
        else if (r.producing)
          memory_->charge(charged_bytes(r.bytes),
                          "the slots of cut edge " + partition_.edges[static_cast<size_t>(r.edge)].name);
      }
    }
    exec_ =
        std::make_unique<Executor>(plan_.graph, std::move(program), *rt.kernels, plan_.optimizer, plan_.threads,
                                   plan_.seed, &mine, &partition_.edges, channel_.get(), memory_.get(), plan_.offload);
    exec_->set_gradient_chunk(plan_.gradient_chunk);
    for (int node : plan_.layout.input_nodes) exec_->set_external(node);
    for (int node : plan_.output_layout.input_nodes)
      if (exec_->is_local(node)) exec_->set_external(node);
    if (!memory_->host_accessible()) {
      memory_->register_host(segment_.data(), segment_.size());
      if (output_segment_) memory_->register_host(output_segment_->data(), output_segment_->size());
    }
    exec_->reserve(plan_.max_batch, pipeline_.sets_of(partition_, plan_.device));
    if (!plan_.affinity.empty()) pin_threads(plan_.affinity);
    if (plan_.profile) {
      exec_->enable_profile();
      if (rt.peak_flops_per_core) peak_flops_ = rt.peak_flops_per_core();
    }
    exec_->init_parameters();
    loss_node_ = plan_.graph.find_role(OpRole::kLoss);
    auto metrics = plan_.graph.find_all_role(OpRole::kMetric);
    metric_node_ = metrics.empty() ? -1 : metrics[0];
    // Fault injection for the tests of failure handling: fail at this
    // step, or hang in it (as a kernel that never returns would, while the
    // watchdog goes on sending heartbeats).
    if (const char* f = std::getenv("DEVMAP_TEST_FAIL_AT_STEP")) fail_at_step_ = std::atoll(f);
    if (const char* h = std::getenv("DEVMAP_TEST_HANG_AT_STEP")) hang_at_step_ = std::atoll(h);
    // Or run it slowly: "N:MS" sleeps MS ms after each instruction of step N.
    if (const char* w = std::getenv("DEVMAP_TEST_SLOW_AT_STEP")) {
      char* end = nullptr;
      slow_at_step_ = std::strtoll(w, &end, 10);
      slow_instruction_ms_ = *end == ':' ? std::atoll(end + 1) : 0;
    }
  }

  const Executor& executor() const { return *exec_; }

  // Sends a frame to the coordinator from inside a step (GRADIENT_READY).
  void set_sender(GradientOutlet::Send send) { send_ = std::move(send); }

  wire::Ready ready(const WorkerRuntime& rt) const {
    wire::Ready r{};
    wire::copy_name(r.runtime, rt.describe ? rt.describe() : rt.device_kind);
    for (const Parameter& p : exec_->parameters())
      if (p.spec.trained) r.param_count += static_cast<uint64_t>(p.spec.shape.numel());
    return r;
  }

  // Writes or reads the named tensors at the given file offsets, or maps
  // the gradient segment of a data-parallel replica.
  void params_io(const ParamsIo& io) {
    if (io.op == ParamsIo::Op::kMapGradients) {
      gradients_ = std::make_unique<GradientOutlet>(io, exec_->parameters(), *memory_);
      return;
    }
    int fd = ::open(io.path.c_str(), io.op == ParamsIo::Op::kSave ? O_WRONLY : O_RDONLY);
    if (fd < 0) throw_runtime("cannot open " + io.path + ": " + std::strerror(errno));
    try {
      for (const ParamsIo::Entry& e : io.entries) transfer_tensor(fd, io, e);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }

  // One tensor between its memory and its byte range of the file. Memory
  // the CPU cannot address goes through a host float32 copy, and a tensor
  // stored as I64 through an int64 one (converted, exact up to 2^24).
  void transfer_tensor(int fd, const ParamsIo& io, const ParamsIo::Entry& e) {
    float* data = tensor_for(e.name);
    const Parameter* p = param_of(e.name);
    const size_t n = static_cast<size_t>(p->spec.shape.numel());
    const uint64_t bytes = n * 4;
    if (n * file_dtype_bytes(e.dtype) != e.bytes)
      throw_runtime(e.name + ": " + std::to_string(e.bytes) + " bytes of " + file_dtype_name(e.dtype) + " in " +
                    io.path + ", " + std::to_string(n) + " elements here");
    const bool save = io.op == ParamsIo::Op::kSave;
    DeviceMemory& mem = exec_->memory_of(*p);  // host memory for an offloaded parameter
    float* host = data;
    if (!mem.host_accessible()) {
      staging_.resize(n);
      host = staging_.data();
      if (save) mem.copy_to_host(host, data, bytes);
    }
    std::vector<int64_t> counts;
    char* file_bytes = reinterpret_cast<char*>(host);
    if (e.dtype == FileDtype::kI64) {
      counts.resize(n);
      if (save)
        for (size_t i = 0; i < n; ++i) counts[i] = std::llround(host[i]);
      file_bytes = reinterpret_cast<char*>(counts.data());
    }
    for (uint64_t done = 0; done < e.bytes;) {
      ssize_t got = save ? ::pwrite(fd, file_bytes + done, e.bytes - done, static_cast<off_t>(e.offset + done))
                         : ::pread(fd, file_bytes + done, e.bytes - done, static_cast<off_t>(e.offset + done));
      if (got <= 0)
        throw_runtime(std::string(save ? "writing " : "reading ") + e.name + " in " + io.path + ": " +
                      (got == 0 ? "unexpected end of file" : std::strerror(errno)));
      done += static_cast<uint64_t>(got);
    }
    if (save) return;
    if (e.dtype == FileDtype::kI64)
      for (size_t i = 0; i < n; ++i) {
        if (counts[i] < 0 || counts[i] > kLargestExactCount)
          throw_runtime(io.path + ": " + e.name + " holds " + std::to_string(counts[i]) +
                        ", outside the counts devmap keeps exactly (0 to " + std::to_string(kLargestExactCount) + ")");
        host[i] = static_cast<float>(counts[i]);
      }
    if (host != data) mem.copy_from_host(data, host, bytes);
  }

  // BYE's body: counters, then the per-op profile when asked for.
  std::string bye() const {
    wire::Bye b{
        read_vm_hwm_bytes(),    0,          0, 0, 0, static_cast<uint32_t>(plan_.threads), memory_->peak_bytes(),
        memory_->limit_bytes(), peak_flops_};
    if (channel_) {
      b.transport_bytes_copied = channel_->stats().bytes_copied;
      b.handoffs = channel_->stats().handoffs;
      b.bytes_handed = channel_->stats().bytes_handed;
    }
    const auto& entries = exec_->profile().entries();
    b.profile_entries = static_cast<uint32_t>(entries.size());
    std::string body(reinterpret_cast<const char*>(&b), sizeof b);
    for (const ProfileEntry& e : entries) {
      wire::ProfileRecord r{};
      wire::copy_name(r.name, e.name);
      r.direction = static_cast<uint32_t>(e.direction);
      r.calls = e.calls;
      r.seconds = e.seconds;
      r.flops = e.flops;
      wire::copy_name(r.kernel, e.kernel);
      body.append(reinterpret_cast<const char*>(&r), sizeof r);
    }
    return body;
  }

  std::string step(const wire::Step& s) {
    if (s.flags & wire::kUpdateOnly) return update_only(s);
    check_step(s);
    inject_test_faults(s);
    const bool train = (s.flags & wire::kTrain) != 0;
    const bool update = train && (s.flags & wire::kNoUpdate) == 0;
    const bool traced = (s.flags & wire::kTrace) != 0;
    if (traced) start_trace();
    auto t0 = std::chrono::steady_clock::now();
    // Statistics describe the step's update: taken on its last micro-batch.
    const bool stats = (s.flags & wire::kParamStats) != 0 && update;
    const std::vector<std::vector<float>> before = stats ? read_parameters() : std::vector<std::vector<float>>{};
    wire::StepDone done{};
    done.step = s.step;
    std::vector<wire::MicroResult> micro = run_passes(s, done);
    if (update) exec_->apply_optimizer(s.step + 1);
    exec_->memory().synchronize();  // a GPU's update is queued: the step's compute ends when it is done
    const auto t1 = std::chrono::steady_clock::now();
    done.compute_seconds = std::chrono::duration<double>(t1 - t0).count();
    done.wait_seconds = exec_->take_wait_seconds();
    const std::vector<wire::ParamStat> param_stats = stats ? parameter_stats(before) : std::vector<wire::ParamStat>{};
    if (train) micro.clear();  // a step reports its loss; only rounds of batches report each one
    if (traced) finish_trace(s.step, t0, t1);
    return wire::encode_step_done(done, param_stats, micro, traced ? &trace_.events() : nullptr);
  }

 private:
  // Throws when a STEP names a slot, batch or micro-batch count outside the plan.
  void check_step(const wire::Step& s) const {
    const uint32_t count = std::max<uint32_t>(s.micro_batches, 1);
    const uint32_t input_slots = plan_.layout.slots, output_slots = output_segment_ ? plan_.output_layout.slots : 0;
    if (s.slot >= input_slots || (output_segment_ && s.slot >= output_slots) || s.batch < 1 ||
        s.batch > plan_.max_batch || count > input_slots || static_cast<int>(count) > plan_.micro_batches)
      throw_runtime("STEP out of range: slot " + std::to_string(s.slot) + ", batch " + std::to_string(s.batch) + ", " +
                    std::to_string(count) + " micro-batches");
  }

  // The failure or hang the tests ask for at a training step
  // (DEVMAP_TEST_FAIL_AT_STEP, DEVMAP_TEST_HANG_AT_STEP; run_passes slows
  // the step DEVMAP_TEST_SLOW_AT_STEP names).
  void inject_test_faults(const wire::Step& s) const {
    if (fail_at_step_ >= 0 && s.step == fail_at_step_ && (s.flags & wire::kTrain))
      throw_runtime("injected failure at step " + std::to_string(s.step) + " (DEVMAP_TEST_FAIL_AT_STEP)");
    if (hang_at_step_ >= 0 && s.step == hang_at_step_ && (s.flags & wire::kTrain))
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }

  void start_trace() {
    if (trace_.capacity() == 0) trace_.reserve(size_t{1} << 14);  // once: no growth in steps like this one
    trace_.clear();
    exec_->set_trace(&trace_);
  }

  // Stops tracing; the step's slice ends where its work ends (as
  // compute_seconds does).
  void finish_trace(int64_t step, std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point t1) {
    exec_->set_trace(nullptr);
    auto ns = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    trace_.add(TraceEvent{ns(t0), ns(t1), step, -1, -1, TraceKind::kStep});
  }

  // Every parameter's value, in exec_->parameters() order.
  std::vector<std::vector<float>> read_parameters() {
    std::vector<std::vector<float>> values;
    for (const Parameter& p : exec_->parameters()) exec_->read_parameter(p, values.emplace_back());
    return values;
  }

  // The step's forward and backward passes (one batch, or a round of
  // micro-batches), handing gradients out as they are final when the STEP
  // asks for it. Returns the round's per-micro-batch results.
  std::vector<wire::MicroResult> run_passes(const wire::Step& s, wire::StepDone& done) {
    std::vector<wire::MicroResult> micro;
    // A device without trained parameters has no gradients mapped, and none to send.
    const bool send_gradients = (s.flags & wire::kSendGradients) != 0 && gradients_;
    const bool slow = slow_at_step_ >= 0 && s.step == slow_at_step_ && (s.flags & wire::kTrain);
    if (send_gradients) gradients_->begin(s.step, send_);
    if (send_gradients || slow)
      exec_->set_after_instruction([this, send_gradients, slow](const Instr& ins) {
        if (send_gradients) gradients_->after(ins);
        if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(slow_instruction_ms_));
      });
    try {
      if (s.micro_batches == 0)
        run_batch(s, done);
      else
        micro = run_round(s, done);
    } catch (...) {
      exec_->set_after_instruction(nullptr);
      throw;
    }
    exec_->set_after_instruction(nullptr);
    if (send_gradients) gradients_->end();
    return micro;
  }

  // The norms of each trained parameter's gradient, update (against
  // `before`, read_parameters() before the step) and value.
  std::vector<wire::ParamStat> parameter_stats(const std::vector<std::vector<float>>& before) {
    std::vector<wire::ParamStat> param_stats;
    auto& params = exec_->parameters();
    std::vector<float> value, grad;
    for (size_t i = 0; i < params.size(); ++i) {
      const Parameter& p = params[i];
      if (!p.spec.trained) continue;  // op state: not updated by the optimizer
      int64_t n = p.spec.shape.numel();
      exec_->read_parameter(p, value, &grad);
      wire::ParamStat st{};
      wire::copy_name(st.name, p.name);
      st.grad_norm = static_cast<float>(l2_norm(grad.data(), n));
      double d = 0;
      for (int64_t j = 0; j < n; ++j) {
        double diff = static_cast<double>(value[static_cast<size_t>(j)]) - before[i][static_cast<size_t>(j)];
        d += diff * diff;
      }
      st.update_norm = static_cast<float>(std::sqrt(d));
      st.value_norm = static_cast<float>(l2_norm(value.data(), n));
      param_stats.push_back(st);
    }
    return param_stats;
  }

  // Binds the input ops (and the output ops computed here) of the current
  // buffer set to input slot `slot` and output slot `out_slot`.
  void bind_slots(uint32_t slot, uint32_t out_slot) {
    auto* base = static_cast<char*>(segment_.data()) + slot * plan_.layout.slot_bytes;
    for (size_t k = 0; k < plan_.layout.input_nodes.size(); ++k)
      exec_->bind_output(plan_.layout.input_nodes[k], reinterpret_cast<float*>(base + plan_.layout.input_offsets[k]));
    if (!output_segment_) return;
    auto* out = static_cast<char*>(output_segment_->data()) + out_slot * plan_.output_layout.slot_bytes;
    for (size_t k = 0; k < plan_.output_layout.input_nodes.size(); ++k) {
      int node = plan_.output_layout.input_nodes[k];
      if (exec_->is_local(node))
        exec_->bind_output(node, reinterpret_cast<float*>(out + plan_.output_layout.input_offsets[k]));
    }
  }

  // The optimizer update of step s.step from the gradients the parameters
  // hold (data-parallel replicas: after their exchange), nothing else.
  std::string update_only(const wire::Step& s) {
    const auto t0 = std::chrono::steady_clock::now();
    if (gradients_) gradients_->read_back();
    exec_->apply_optimizer(s.step + 1);
    exec_->memory().synchronize();  // a GPU's update is queued: compute_seconds includes it
    wire::StepDone done{};
    done.step = s.step;
    done.compute_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return wire::encode_step_done(done, {}, {}, nullptr);
  }

  // One (micro-)batch, as the coordinator drives lock-step runs.
  void run_batch(const wire::Step& s, wire::StepDone& done) {
    exec_->use_set(0);
    bind_slots(s.slot, s.slot);
    const bool train = (s.flags & wire::kTrain) != 0;
    StepInfo info{s.step, s.sample_offset, s.batch_total, train};
    info.continues_step = (s.flags & wire::kAccumulate) != 0;  // losses add to the earlier micro-batches'
    exec_->forward(s.batch, info);
    if (loss_node_ >= 0 && exec_->is_local(loss_node_)) done.loss = exec_->scalar(loss_node_);
    if (metric_node_ >= 0 && exec_->is_local(metric_node_)) done.metric = exec_->scalar(metric_node_);
    if (train) exec_->backward(s.batch, info, (s.flags & wire::kAccumulate) != 0);
    exec_->finish_step(info);
  }

  // A round of micro-batches run as this device's share of the pipeline
  // schedule: training, one step's micro-batches (losses summed in
  // micro-batch order); otherwise consecutive batches, each reported.
  std::vector<wire::MicroResult> run_round(const wire::Step& s, wire::StepDone& done) {
    const int count = static_cast<int>(s.micro_batches);
    const bool train = (s.flags & wire::kTrain) != 0;
    const std::vector<int64_t> sizes = wire::round_sizes(s);
    std::vector<int64_t> offsets;
    if (static_cast<int>(sizes.size()) != count)
      throw_runtime("STEP: " + std::to_string(s.batch_total) + " samples do not make " + std::to_string(count) +
                    " micro-batches");
    for (int64_t k = 0, at = 0; k < count; at += sizes[static_cast<size_t>(k)], ++k) offsets.push_back(at);
    std::vector<wire::MicroResult> results(static_cast<size_t>(count), wire::MicroResult{0, 0});
    const std::vector<PipelineAction>& actions = pipeline_.schedule(count, train).actions.at(device_index_);
    for (const PipelineAction& a : actions) {
      const auto m = static_cast<size_t>(a.micro);
      exec_->use_set(a.set);
      StepInfo info{s.step, train ? offsets[m] : 0, train ? s.batch_total : sizes[m], train, a.micro};
      info.continues_step = train && a.micro > 0;  // the step's loss adds up over its micro-batches
      if (!a.backward && a.segment == 0) {
        const uint32_t slot = (s.slot + static_cast<uint32_t>(a.micro)) % plan_.layout.slots;
        bind_slots(slot, output_segment_ ? (s.slot + static_cast<uint32_t>(a.micro)) % plan_.output_layout.slots : 0);
      }
      exec_->run_segment(a.backward, a.segment, sizes[m], info, a.micro > 0);
      if (!a.backward) {
        if (loss_node_ >= 0 && exec_->is_local(loss_node_) && exec_->segment_computes(a.segment, loss_node_))
          results[m].loss = exec_->scalar(loss_node_);
        if (metric_node_ >= 0 && exec_->is_local(metric_node_) && exec_->segment_computes(a.segment, metric_node_))
          results[m].metric = exec_->scalar(metric_node_);
      }
      if (a.last_of_micro) exec_->finish_micro(info);
    }
    // Training: the step's loss, its micro-batches' chunks added in order
    // (Executor::scalar), as after the last; otherwise each batch's own.
    if (train && !results.empty()) {
      done.loss = results.back().loss;
      done.metric = results.back().metric;
    }
    return results;
  }

  // "op.param" names a parameter's value, "op.param.optK" its optimizer state K.
  const Parameter* param_of(const std::string& name) const {
    std::string base = name;
    if (auto dot = name.rfind(".opt"); dot != std::string::npos && dot + 4 < name.size()) base = name.substr(0, dot);
    for (const Parameter& p : exec_->parameters())
      if (p.name == base) return &p;
    throw_runtime("this worker holds no parameter named '" + name + "'");
  }
  float* tensor_for(const std::string& name) {
    const Parameter* p = param_of(name);
    if (p->name == name) return p->value.data();
    size_t k = std::stoul(name.substr(name.rfind(".opt") + 4));
    if (k >= p->state.size()) throw_runtime("parameter '" + p->name + "' has no optimizer state " + std::to_string(k));
    return p->state[k].data();
  }

  WorkerPlan plan_;
  ShmSegment segment_;
  std::unique_ptr<ShmSegment> output_segment_;
  Partition partition_;
  PipelinePlan pipeline_;
  size_t device_index_ = 0;  // in partition_.devices
  std::unique_ptr<ShmChannel> channel_;
  std::unique_ptr<DeviceMemory> memory_;  // outlives the executor, whose buffers it holds
  // A data-parallel replica's, once mapped; outlives the executor, whose
  // gradients may live in its segment.
  std::unique_ptr<GradientOutlet> gradients_;
  std::unique_ptr<Executor> exec_;
  double peak_flops_ = 0;  // WorkerRuntime::peak_flops_per_core, when profiling
  int loss_node_ = -1, metric_node_ = -1;
  int64_t fail_at_step_ = -1, hang_at_step_ = -1, slow_at_step_ = -1, slow_instruction_ms_ = 0;
  TraceBuffer trace_;           // the traced step's timeline, reused step after step (storage made at the first)
  std::vector<float> staging_;  // PARAMS_IO's host copy of a tensor the CPU cannot address
  GradientOutlet::Send send_;
};

void serve(const Args& args, const WorkerRuntime& rt) {
  // A coordinator that died between spawning this worker and now has left
  // it to another parent: recording that one would orphan this worker.
  const pid_t parent = args.coordinator > 0 ? args.coordinator : ::getppid();
  if (::getppid() != parent) {
    std::fprintf(stderr, "%s: the coordinator (pid %d) is gone before this worker started: exiting\n",
                 args.device.c_str(), static_cast<int>(parent));
    ::_exit(1);
  }
  zmq::context_t ctx(1);
  ControlClient client(ctx, args.endpoint, args.device);
  std::unique_ptr<Worker> worker;
  std::unique_ptr<Watchdog> watchdog;  // declared after worker: stops before the executor it watches goes
  try {
    wire::Hello hello{};
    hello.protocol_version = wire::kProtocolVersion;
    hello.pid = static_cast<int32_t>(::getpid());
    wire::copy_name(hello.device, args.device);
    client.send(wire::frame(wire::MsgType::kHello, hello));

    for (;;) {
      wire::Message m = await_message(client, parent);
      switch (m.type) {
        case wire::MsgType::kPlan: {
          if (worker) throw_runtime("a second PLAN");
          WorkerPlan plan = decode_worker_plan(m.body);
          watchdog = std::make_unique<Watchdog>(ctx, args.endpoint, args.device, parent, plan.run_prefix, plan.run_dir);
          worker = std::make_unique<Worker>(ctx, rt, std::move(plan));
          worker->set_sender([&client](const std::string& frame) { client.send(frame); });
          watchdog->watch(&worker->executor());
          // Test hook: a worker that hangs between its PLAN and its READY.
          if (std::getenv("DEVMAP_TEST_HANG_BEFORE_READY"))
            for (;;) ::pause();
          client.send(wire::frame(wire::MsgType::kReady, worker->ready(rt)));
          break;
        }
        case wire::MsgType::kStep: {
          if (!worker) throw_runtime("STEP before PLAN");
          auto step = m.as<wire::Step>();
          watchdog->set_step(step.step);
          client.send(worker->step(step));
          watchdog->set_step(-1);
          break;
        }
        case wire::MsgType::kParamsIo:
          if (!worker) throw_runtime("PARAMS_IO before PLAN");
          worker->params_io(decode_params_io(m.body));
          client.send(wire::frame(wire::MsgType::kParamsDone, std::string_view()));
          break;
        case wire::MsgType::kShutdown:
          if (worker)
            client.send(wire::frame(wire::MsgType::kBye, std::string_view(worker->bye())));
          else
            client.send(wire::frame(wire::MsgType::kBye, wire::Bye{read_vm_hwm_bytes(), 0, 0, 0, 0, 0, 0, 0, 0}));
          return;
        case wire::MsgType::kError: throw_runtime("coordinator: " + m.body);
        default: throw_runtime(std::string("unexpected ") + wire::msg_type_name(m.type) + " message");
      }
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    try {
      client.send(wire::frame(wire::MsgType::kError, std::string_view(what)));
    } catch (...) {
    }
    throw;
  }
}

}  // namespace

int worker_main(int argc, char** argv, const WorkerRuntime& rt) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      print_usage(rt.program, std::cout);
      return 0;
    }
  if (argc == 2 && std::strcmp(argv[1], "--describe") == 0) {
    std::cout << (rt.describe ? rt.describe() : rt.device_kind) << "\n";
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--fma-peak") == 0) {
    std::cout << (rt.peak_flops_per_core ? rt.peak_flops_per_core() : 0.0) << "\n";
    return 0;
  }
  Args args;
  try {
    args = parse_args(argc, argv, rt.program);
  } catch (const Error& e) {
    std::cerr << e.what() << "\n";
    return e.exit_code();
  }
  try {
    serve(args, rt);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << rt.program << " " << args.device << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace devmap
