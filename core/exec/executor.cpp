#include "core/exec/executor.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>

#include "core/base/error.h"
#include "core/base/random.h"
#include "core/exec/host_memory.h"
#include "core/graph/split_op.h"
#include "core/plan/tensor_allocations.h"

namespace devmap {
namespace {

// A device timer's seconds as a trace slice's nanoseconds.
int64_t device_ns(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * 1e9));
}

}  // namespace

Executor::Executor(const Graph& graph, Program program, const KernelFactory& kernels, const OptimizerConfig& optimizer,
                   int threads, uint64_t seed, const DeviceProgram* part, const std::vector<Edge>* edges,
                   Channel* channel, DeviceMemory* memory, bool offload)
    : graph_(graph),
      program_(std::move(program)),
      edges_(edges),
      channel_(channel),
      seed_(seed),
      pool_(std::make_unique<ThreadPool>(threads)) {
  if (!memory) {
    own_memory_ = std::make_unique<HostMemory>("host", 0);
    memory = own_memory_.get();
  }
  memory_ = memory;
  host_ = memory_->host_accessible();
  const size_t n = static_cast<size_t>(graph_.size());
  const size_t nt = static_cast<size_t>(program_.tensor_count());
  edge_of_.assign(nt, -1);
  if (part) {
    forward_ = part->forward;
    backward_ = part->backward;
    local_ = part->local_nodes;
    uses_ = part->uses_tensor;
    owns_loss_ = part->owns_loss;
    assert(edges);
    for (const Edge& e : *edges) edge_of_[static_cast<size_t>(e.tensor)] = e.id;
    assert((part->sends.empty() && part->recvs.empty()) || channel);
  } else {
    forward_ = program_.forward;
    backward_ = program_.backward;
    local_ = program_.needed;
    uses_.assign(nt, false);
    for (size_t t = 0; t < nt; ++t) uses_[t] = program_.needed[static_cast<size_t>(program_.tensors[t].node)];
    owns_loss_ = program_.loss_node >= 0;
  }
  fsegs_ = segments_of(forward_);
  bsegs_ = segments_of(backward_);
  kernels_.resize(n);
  node_params_.resize(n);
  for (const Instr& ins : forward_)
    if (ins.kind == InstrKind::kForward && !kernels_[static_cast<size_t>(ins.node)])
      kernels_[static_cast<size_t>(ins.node)] = kernels.make_kernel(graph_.node(ins.node).op());
  bool training = program_.loss_node >= 0;
  if (training) optimizer_ = kernels.make_optimizer(optimizer);
  if (offload) {
    offload_memory_ = memory_->make_offload_memory(memory_->device() + " host memory (offloaded)");
    offload_ = offload_layout(graph_, local_, training, training ? optimizer_->state_count() : 0);
    // The update of offloaded state runs where the state lives: on the host.
    if (training) host_optimizer_ = kernels.make_host_optimizer(optimizer);
  }
  for (int i = 0; i < graph_.size(); ++i) {
    if (!local_[static_cast<size_t>(i)]) continue;
    const Node& node = graph_.node(i);
    for (const ParamSpec& spec : node.params) {
      Parameter p;
      p.name = node.name + "." + spec.name;
      p.node = i;
      p.spec = spec;
      DeviceMemory& home = memory_of(p);
      p.value = DeviceBuffer(home, spec.shape.numel(), p.name);
      if (training && spec.trained) {
        p.grad = DeviceBuffer(home, spec.shape.numel(), p.name + " gradient");
        for (int s = 0; s < optimizer_->state_count(); ++s)
          p.state.emplace_back(home, spec.shape.numel(), p.name + " optimizer state");
      }
      node_params_[static_cast<size_t>(i)].push_back(static_cast<int>(params_.size()));
      params_.push_back(std::move(p));
    }
  }
  staged_value_.assign(params_.size(), nullptr);
  staged_grad_.assign(params_.size(), nullptr);
  if (!offload_.empty()) {
    staging_ =
        DeviceBuffer(*memory_, static_cast<int64_t>(offload_.staging_bytes / sizeof(float)), "offload staging pool");
    copies_ = memory_->make_copy_queue();
  }
  bound_.assign(nt, nullptr);
  host_of_.assign(nt, nullptr);
  external_.assign(n, false);
  alias_of_.assign(nt, -1);
  relu_into_.assign(n, false);
  relu_gradient_into_.assign(n, false);
  fused_backward_.assign(n, false);
  scalars_.assign(n, 0.0f);
  buffers_.assign(nt, nullptr);
}

Executor::~Executor() = default;

Shape Executor::tensor_shape(int tensor, int64_t batch) const {
  const TensorInfo& t = program_.tensors[static_cast<size_t>(tensor)];
  return graph_.node(t.node).out_shape_for(batch);
}

void Executor::set_external(int node) {
  assert(max_batch_ == 0 && "set_external before reserve");
  assert(edge_of_[static_cast<size_t>(node)] < 0 && "the channel binds tensors that cross devices");
  external_[static_cast<size_t>(node)] = true;
}

void Executor::plan_fused_relus() {
  fused_.clear();
  fused_gradients_.clear();
  if (fuse_relus_) {
    for (const FusedRelu& f : devmap::fused_relus(FusedReluInputs{&graph_, &forward_, &edge_of_, &external_, host_}))
      if (kernels_[static_cast<size_t>(f.producer)]->fuses_relu()) fused_.push_back(f);
    for (const FusedReluGradient& f :
         devmap::fused_relu_gradients(FusedReluGradientInputs{&graph_, &backward_, &edge_of_, host_}))
      if (kernels_[static_cast<size_t>(f.consumer)]->fuses_relu_gradient()) fused_gradients_.push_back(f);
  }
  std::fill(alias_of_.begin(), alias_of_.end(), -1);
  std::fill(relu_into_.begin(), relu_into_.end(), false);
  std::fill(relu_gradient_into_.begin(), relu_gradient_into_.end(), false);
  std::fill(fused_backward_.begin(), fused_backward_.end(), false);
  for (const FusedRelu& f : fused_) {
    alias_of_[static_cast<size_t>(f.relu)] = f.producer;
    relu_into_[static_cast<size_t>(f.producer)] = true;
  }
  for (const FusedReluGradient& f : fused_gradients_) {
    alias_of_[static_cast<size_t>(f.output_grad)] = f.input_grad;
    relu_gradient_into_[static_cast<size_t>(f.consumer)] = true;
    fused_backward_[static_cast<size_t>(f.relu)] = true;
  }
}

void Executor::reserve(int64_t max_batch, int sets) {
  assert(sets >= 1);
  max_batch_ = max_batch;
  use_set(0);
  std::fill(buffers_.begin(), buffers_.end(), nullptr);
  recomputed_.clear();
  arenas_.clear();
  stored_.clear();
  // Set 0 becomes the current one; sets 1.. wait in stored_.
  stored_.resize(static_cast<size_t>(sets));
  plan_fused_relus();
  // The same list the memory plan sums (core/plan/tensor_allocations.h).
  const TensorArena arena =
      tensor_arena(TensorAllocationInputs{&graph_, &program_, &uses_, &edge_of_, &external_, host_, &fused_, &forward_,
                                          &backward_, &fused_gradients_},
                   max_batch);
  arenas_.resize(static_cast<size_t>(sets));
  for (int k = sets - 1; k >= 0; --k) {
    DeviceBuffer& block = arenas_[static_cast<size_t>(k)];
    block = DeviceBuffer(*memory_, static_cast<int64_t>(arena.bytes / sizeof(float)),
                         sets > 1 ? "tensor arena (buffer set " + std::to_string(k) + ")" : "tensor arena");
    std::vector<float*>& buffers = k == 0 ? buffers_ : stored_[static_cast<size_t>(k)].buffers;
    std::vector<float*>& recomputed = k == 0 ? recomputed_ : stored_[static_cast<size_t>(k)].recomputed;
    buffers.assign(static_cast<size_t>(program_.tensor_count()), nullptr);
    recomputed.assign(static_cast<size_t>(program_.tensor_count()), nullptr);
    for (const TensorAllocation& a : arena.allocations)
      (a.recomputed ? recomputed : buffers)[static_cast<size_t>(a.tensor)] = block.data() + a.offset / sizeof(float);
    if (k > 0) {
      stored_[static_cast<size_t>(k)].bound = bound_;
      stored_[static_cast<size_t>(k)].host_of = host_of_;
    }
  }
  current_set_ = 0;
  // One workspace as large as the largest op's planned figure (the op
  // schema's, which the memory plan counts); a kernel may not need more.
  workspace_.reset();
  workspace_bytes_ = 0;
  for (int i = 0; i < graph_.size(); ++i) {
    const OpKernel* k = kernels_[static_cast<size_t>(i)].get();
    if (!k) continue;
    const Node& node = graph_.node(i);
    const size_t planned = node.workspace_bytes(max_batch), need = k->workspace_bytes(node, max_batch);
    if (need > planned)
      throw_runtime(node.name + " (" + node.op() + "): its kernel needs " + std::to_string(need) +
                    " bytes of workspace at a batch of " + std::to_string(max_batch) + ", more than the " +
                    std::to_string(planned) + " its op schema plans for (a kernel bug)");
    workspace_bytes_ = std::max(workspace_bytes_, planned);
  }
  workspace_ =
      DeviceBuffer(*memory_, static_cast<int64_t>((workspace_bytes_ + sizeof(float) - 1) / sizeof(float)), "workspace");
  // The external tensors this device stages: fed inputs, read-back outputs.
  staged_inputs_.clear();
  staged_outputs_.clear();
  for (int node = 0; node < graph_.size() && !host_; ++node) {
    auto i = static_cast<size_t>(node);
    if (!external_[i] || !uses_[i]) continue;
    (graph_.node(node).schema->fed_by_coordinator() ? staged_inputs_ : staged_outputs_).push_back(node);
  }
}

void Executor::use_set(int set) {
  if (set == current_set_ || stored_.empty()) return;
  assert(set >= 0 && set < static_cast<int>(stored_.size()));
  BufferSet& out = stored_[static_cast<size_t>(current_set_)];
  out.buffers = std::move(buffers_);
  out.bound = std::move(bound_);
  out.host_of = std::move(host_of_);
  out.recomputed = std::move(recomputed_);
  BufferSet& in = stored_[static_cast<size_t>(set)];
  buffers_ = std::move(in.buffers);
  bound_ = std::move(in.bound);
  host_of_ = std::move(in.host_of);
  recomputed_ = std::move(in.recomputed);
  current_set_ = set;
}

bool Executor::segment_computes(int segment, int node) const {
  const Segment& s = fsegs_.at(static_cast<size_t>(segment));
  for (int i = s.begin; i < s.end; ++i) {
    const Instr& ins = forward_[static_cast<size_t>(i)];
    if (ins.kind == InstrKind::kForward && ins.node == node) return true;
  }
  return false;
}

void Executor::init_parameters() {
  std::vector<float> v;
  for (Parameter& p : params_) {
    DeviceMemory& home = memory_of(p);
    int64_t count = p.spec.shape.numel();
    for (DeviceBuffer& s : p.state) home.fill(s.data(), 0.0f, count);
    if (p.spec.init == ParamInit::kZeros || p.spec.init == ParamInit::kOnes) {
      home.fill(p.value.data(), p.spec.init == ParamInit::kOnes ? 1.0f : 0.0f, count);
      continue;
    }
    v.resize(static_cast<size_t>(count));
    // A part of a split op draws its rows of the whole op's parameter.
    const WholeParam whole = whole_param(graph_.node(p.node), p.spec);
    PhiloxKey key = philox_key(seed_, whole.name);
    float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.spec.fan_in)));
    for (int64_t i = 0; i < count; ++i)
      v[static_cast<size_t>(i)] = (2.0f * uniform_at(key, static_cast<uint64_t>(whole.offset + i)) - 1.0f) * bound;
    home.copy_from_host(p.value.data(), v.data(), v.size() * sizeof(float));
  }
  memory_->synchronize();
}

DeviceMemory& Executor::memory_of(const Parameter& p) const {
  return offload_memory_ && p.spec.trained ? *offload_memory_ : *memory_;
}

void Executor::read_parameter(const Parameter& p, std::vector<float>& value, std::vector<float>* grad) const {
  auto count = static_cast<size_t>(p.spec.shape.numel());
  value.resize(count);
  DeviceMemory& home = memory_of(p);
  home.copy_to_host(value.data(), p.value.data(), count * sizeof(float));
  if (grad) {
    grad->assign(count, 0.0f);  // state (not trained) has no gradient: zeros
    if (p.spec.trained) home.copy_to_host(grad->data(), p.grad.data(), count * sizeof(float));
  }
}

void Executor::bind_output(int node, float* data) {
  assert(external_[static_cast<size_t>(node)] && "set_external(node) first");
  (host_ ? bound_ : host_of_)[static_cast<size_t>(node)] = data;
}

TensorView Executor::view(int tensor, int64_t batch) const {
  assert(batch <= max_batch_ && "reserve() a larger batch first");
  if (const int alias = alias_of_[static_cast<size_t>(tensor)]; alias >= 0)
    return TensorView{view(alias, batch).data, tensor_shape(tensor, batch)};
  if (in_backward_ && !recomputed_.empty())
    if (float* again = recomputed_[static_cast<size_t>(tensor)]) return TensorView{again, tensor_shape(tensor, batch)};
  float* bound = bound_[static_cast<size_t>(tensor)];
  assert((bound || buffers_[static_cast<size_t>(tensor)]) && "tensor has no memory on this device");
  return TensorView{bound ? bound : buffers_[static_cast<size_t>(tensor)], tensor_shape(tensor, batch)};
}

TensorView Executor::output(int node, int64_t batch) const {
  return view(node, batch);
}

KernelContext Executor::context(const StepInfo& info) {
  KernelContext ctx;
  ctx.pool = pool_.get();
  ctx.workspace = workspace_.data();
  ctx.workspace_bytes = workspace_bytes_;
  ctx.seed = seed_;
  ctx.step = info.step;
  ctx.sample_offset = info.sample_offset;
  ctx.batch_total = info.batch_total;
  ctx.training = info.training;
  return ctx;
}

// Staged external tensors: inputs go to the device before the forward pass,
// outputs come back after it.
void Executor::copy_staged_inputs(int64_t batch) {
  for (int node : staged_inputs_) {
    auto i = static_cast<size_t>(node);
    assert(host_of_[i] && "bind_output() every external op before running");
    memory_->copy_from_host(buffers_[i], host_of_[i],
                            static_cast<size_t>(tensor_shape(node, batch).numel()) * sizeof(float));
  }
}

void Executor::copy_staged_outputs(int64_t batch) {
  for (int node : staged_outputs_) {
    auto i = static_cast<size_t>(node);
    assert(host_of_[i] && "bind_output() every external op before running");
    memory_->copy_to_host(host_of_[i], buffers_[i],
                          static_cast<size_t>(tensor_shape(node, batch).numel()) * sizeof(float));
  }
}

void Executor::forward(int64_t batch, const StepInfo& info) {
  copy_staged_inputs(batch);
  run(forward_, 0, static_cast<int>(forward_.size()), batch, info, false);
  copy_staged_outputs(batch);
}

void Executor::backward(int64_t batch, const StepInfo& info, bool accumulate) {
  assert(program_.loss_grad >= 0);
  if (owns_loss_) memory_->fill(view(program_.loss_grad, batch).data, 1.0f, 1);
  in_backward_ = true;
  run(backward_, 0, static_cast<int>(backward_.size()), batch, info, accumulate);
  in_backward_ = false;
}

void Executor::run_segment(bool backward, int segment, int64_t batch, const StepInfo& info, bool accumulate) {
  const std::vector<Segment>& segs = backward ? bsegs_ : fsegs_;
  const Segment& seg = segs.at(static_cast<size_t>(segment));
  if (!backward && segment == 0) copy_staged_inputs(batch);
  if (backward && segment == 0 && owns_loss_) memory_->fill(view(program_.loss_grad, batch).data, 1.0f, 1);
  in_backward_ = backward;
  run(backward ? backward_ : forward_, seg.begin, seg.end, batch, info, accumulate);
  in_backward_ = false;
  if (!backward && segment + 1 == static_cast<int>(segs.size())) copy_staged_outputs(batch);
}

TraceKind Executor::trace_kind(InstrKind kind) {
  switch (kind) {
    case InstrKind::kForward: return TraceKind::kForward;
    case InstrKind::kBackward: return TraceKind::kBackward;
    case InstrKind::kSumGrads: return TraceKind::kSumGrads;
    case InstrKind::kSend: return TraceKind::kSend;
    case InstrKind::kRecv: return TraceKind::kRecv;
  }
  return TraceKind::kForward;
}

void Executor::trace_slot_wait(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to,
                               int edge, const StepInfo& info) {
  auto ns = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  trace_->add(TraceEvent{ns(from), ns(to), info.step, info.micro, edge, TraceKind::kSlotWait});
}

void Executor::enable_profile() {
  profiling_ = true;
  if (!timer_) timer_ = memory_->make_timer();
}

void Executor::set_trace(TraceBuffer* trace) {
  trace_ = trace;
  if (trace_ && !timer_) timer_ = memory_->make_timer();
}

void Executor::run(const std::vector<Instr>& instrs, int begin, int end, int64_t batch, const StepInfo& info,
                   bool accumulate) {
  KernelContext ctx = context(info);
  std::vector<TensorView> inputs, params;  // reused by every forward of the pass
  timed_.clear();
  pending_slices_.clear();
  if (timer_) timer_->clear();  // what a pass that threw left
  // Offload: the instructions that read offloaded parameters, each fetched
  // into the end of the staging pool its predecessor does not use while
  // that one computes (core/plan/offload_layout.h); the first before the
  // pass starts.
  std::vector<int> staged;
  if (copies_) {
    std::fill(staged_value_.begin(), staged_value_.end(), nullptr);  // what a pass that threw left
    std::fill(staged_grad_.begin(), staged_grad_.end(), nullptr);
  }
  if (copies_)
    for (int k = begin; k < end; ++k)
      if (stages(instrs[static_cast<size_t>(k)])) staged.push_back(k);
  size_t next_staged = 0;
  float* next_share = nullptr;
  uint64_t next_ticket = 0;
  auto fetch_next = [&] {
    const Instr& ins = instrs[static_cast<size_t>(staged[next_staged])];
    next_share = staging_.data() + offload_.staging_offset(static_cast<int>(next_staged), ins.node) / sizeof(float);
    next_ticket = fetch(ins, next_share, accumulate, info);
  };
  if (!staged.empty()) fetch_next();
  for (int k = begin; k < end; ++k) {
    const Instr& ins = instrs[static_cast<size_t>(k)];
    // A fused relu's output tensor (its node's) is its conv2d's buffer.
    if (ins.kind == InstrKind::kForward && alias_of_[static_cast<size_t>(ins.node)] >= 0) {
      finished_.fetch_add(1, std::memory_order_relaxed);  // its conv2d wrote its output
      continue;
    }
    // A fused relu gradient's relu: the max_pool2d after it wrote its input gradient.
    if (ins.kind == InstrKind::kBackward && fused_backward_[static_cast<size_t>(ins.node)]) {
      finished_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    running_.store(static_cast<int64_t>(ins.kind) << 32 | static_cast<uint32_t>(ins.node), std::memory_order_relaxed);
    const bool staging = next_staged < staged.size() && staged[next_staged] == k;
    float* const share = next_share;
    if (staging) {  // its parameters are in `share` once its fetch is done
      copies_->order(next_ticket);
      point_at_share(ins.node, share);
    }
    const InstrTiming timing = start_timing(ins);
    if (staging && ++next_staged < staged.size()) fetch_next();  // the next one's copy overlaps this one's compute
    if (host_) bind_outgoing_slots(ins, batch, info);
    switch (ins.kind) {
      case InstrKind::kForward:
        if (in_backward_)
          recompute(ins, batch, ctx, inputs, params);
        else
          run_kernel_forward(ins, batch, ctx, info.continues_step, inputs, params);
        break;
      case InstrKind::kBackward: run_kernel_backward(ins, batch, ctx, accumulate); break;
      case InstrKind::kSumGrads: sum_grads(ins, batch); break;
      case InstrKind::kSend: send_edge(ins, batch, info); break;
      case InstrKind::kRecv: receive_edge(ins, batch, info); break;
    }
    finish_timing(ins, timing, info);
    if (staging) {
      point_at_share(ins.node, nullptr);
      if (ins.kind == InstrKind::kBackward) {
        const uint64_t back = write_back(ins, share, info);
        if (after_instruction_) copies_->wait(back);  // its gradients are on the host when it is told
      }
    }
    if (after_instruction_) after_instruction_(ins);
    finished_.fetch_add(1, std::memory_order_relaxed);
  }
  running_.store(-1, std::memory_order_relaxed);
  if (copies_) {  // the pass's gradients are on the host when it returns
    copies_->drain();
    if (trace_) {
      std::vector<TraceEvent> copied;
      copies_->take_events(copied);
      for (const TraceEvent& e : copied) trace_->add(e);
    }
  }
  if (profiling_ || !pending_slices_.empty()) record_pass(batch);
}

Executor::InstrTiming Executor::start_timing(const Instr& ins) {
  InstrTiming t;
  // A send's row is its own copy and slot wait: on a device that queues its
  // work, the work queued before it finishes first, outside the row
  // (copy_to_host would otherwise wait for it inside the send).
  if ((profiling_ || trace_) && timer_ && ins.kind == InstrKind::kSend) memory_->synchronize();
  if (profiling_) t.host_start = std::chrono::steady_clock::now();
  t.trace_start_ns = trace_ ? trace_now_ns() : 0;
  const bool device_timed =
      (profiling_ || trace_) && timer_ && ins.kind != InstrKind::kSend && ins.kind != InstrKind::kRecv;
  t.interval = device_timed ? timer_->start() : -1;
  return t;
}

void Executor::finish_timing(const Instr& ins, const InstrTiming& t, const StepInfo& info) {
  if (t.interval >= 0) timer_->stop(t.interval);
  if (trace_) {
    const TraceEvent e{t.trace_start_ns, trace_now_ns(), info.step, info.micro, ins.node, trace_kind(ins.kind)};
    if (t.interval >= 0)
      pending_slices_.push_back(PendingSlice{e, t.interval});
    else
      trace_->add(e);
  }
  if (profiling_)
    timed_.push_back(Timed{&ins, t.interval,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - t.host_start).count()});
}

template <typename Wait>
float* Executor::timed_wait(int edge, const StepInfo& info, bool traced, Wait&& wait) {
  const auto w0 = std::chrono::steady_clock::now();
  float* slot = wait();
  const auto w1 = std::chrono::steady_clock::now();
  wait_seconds_ += std::chrono::duration<double>(w1 - w0).count();
  if (traced && trace_) trace_slot_wait(w0, w1, edge, info);
  return slot;
}

void Executor::bind_outgoing_slots(const Instr& ins, int64_t batch, const StepInfo& info) {
  if (ins.kind == InstrKind::kRecv) return;
  for (int t : ins.out) {
    if (t < 0) continue;
    const int e = edge_of_[static_cast<size_t>(t)];
    if (e < 0) continue;
    const size_t bytes = tensor_shape(t, batch).numel() * 4;
    bound_[static_cast<size_t>(t)] =
        timed_wait(e, info, true, [&] { return channel_->acquire(e, info.step, bytes, info.micro); });
  }
}

void Executor::sum_grads(const Instr& ins, int64_t batch) {
  TensorView out = view(ins.out[0], batch);
  parts_.clear();
  for (int t : ins.in) parts_.push_back(view(t, batch).data);
  memory_->sum(out.data, parts_, out.numel(), *pool_);
}

void Executor::send_edge(const Instr& ins, int64_t batch, const StepInfo& info) {
  if (!host_) {  // copy the staged tensor into a slot, then signal
    const int t = ins.in[0];
    const size_t bytes = tensor_shape(t, batch).numel() * sizeof(float);
    float* slot =
        timed_wait(ins.node, info, true, [&] { return channel_->acquire(ins.node, info.step, bytes, info.micro); });
    memory_->copy_to_host(slot, buffers_[static_cast<size_t>(t)], bytes);
  }
  channel_->send(ins.node, info.step, info.micro);
}

void Executor::receive_edge(const Instr& ins, int64_t batch, const StepInfo& info) {
  const int t = ins.out[0];
  float* slot = timed_wait(ins.node, info, false, [&] { return channel_->receive(ins.node, info.step, info.micro); });
  if (host_)
    bound_[static_cast<size_t>(t)] = slot;
  else
    memory_->copy_from_host(buffers_[static_cast<size_t>(t)], slot, tensor_shape(t, batch).numel() * sizeof(float));
}

void Executor::record_pass(int64_t batch) {
  // One wait for the device per pass, not one per instruction.
  const bool any_device = !pending_slices_.empty() ||
                          std::any_of(timed_.begin(), timed_.end(), [](const Timed& t) { return t.interval >= 0; });
  const std::vector<double> device = any_device ? timer_->collect() : std::vector<double>{};
  if (profiling_)
    for (const Timed& t : timed_)
      record(*t.ins, batch, t.interval >= 0 ? device.at(static_cast<size_t>(t.interval)) : t.seconds);
  timed_.clear();
  for (PendingSlice& p : pending_slices_) {
    p.event.end_ns = p.event.start_ns + device_ns(device.at(static_cast<size_t>(p.interval)));
    trace_->add(p.event);
  }
  pending_slices_.clear();
}

Executor::Progress Executor::progress() const {
  Progress p;
  int64_t r = running_.load(std::memory_order_relaxed);
  p.finished = finished_.load(std::memory_order_relaxed);
  if (r < 0) return p;
  p.running = true;
  p.kind = static_cast<InstrKind>(r >> 32);
  p.node = static_cast<int>(static_cast<uint32_t>(r & 0xffffffff));
  return p;
}

std::string Executor::describe(const Progress& p) const {
  if (!p.running) return "idle";
  switch (p.kind) {
    case InstrKind::kForward: return graph_.node(p.node).name + " forward";
    case InstrKind::kBackward: return graph_.node(p.node).name + " backward";
    case InstrKind::kSumGrads: return graph_.node(p.node).name + " gradient sum";
    case InstrKind::kSend:
    case InstrKind::kRecv: {
      std::string edge = edges_ ? (*edges_)[static_cast<size_t>(p.node)].name : "edge " + std::to_string(p.node);
      return (p.kind == InstrKind::kSend ? "send " : "recv ") + edge;
    }
  }
  return "?";
}

std::string Executor::implementation(int node, bool backward) const {
  const auto& k = kernels_[static_cast<size_t>(node)];
  if (!k) return {};
  if (backward)
    return k->backward_implementation(graph_.node(node)) +
           (relu_gradient_into_[static_cast<size_t>(node)] ? "+relu" : "");
  // A conv2d that writes its fused relu's output says so (the relu has no row).
  return k->implementation(graph_.node(node)) + (relu_into_[static_cast<size_t>(node)] ? "+relu" : "");
}

void Executor::record(const Instr& ins, int64_t batch, double seconds) {
  switch (ins.kind) {
    case InstrKind::kForward: {
      const Node& n = graph_.node(ins.node);
      profile_.add(n.name, ProfileDirection::kForward, seconds, n.forward_flops(batch),
                   implementation(ins.node, false));
      break;
    }
    case InstrKind::kBackward: {
      const Node& n = graph_.node(ins.node);
      const bool input_gradients = std::any_of(ins.out.begin(), ins.out.end(), [](int t) { return t >= 0; });
      profile_.add(n.name, ProfileDirection::kBackward, seconds, n.backward_flops(batch, input_gradients),
                   implementation(ins.node, true));
      break;
    }
    case InstrKind::kSumGrads: profile_.add(graph_.node(ins.node).name, ProfileDirection::kSumGrads, seconds, 0); break;
    case InstrKind::kSend:
    case InstrKind::kRecv: {
      const Edge& e = (*edges_)[static_cast<size_t>(ins.node)];
      profile_.add(e.name, ins.kind == InstrKind::kSend ? ProfileDirection::kSend : ProfileDirection::kRecv, seconds,
                   0);
      break;
    }
  }
}

bool Executor::runs_by_chunk(const Node& node, int64_t batch, bool training) const {
  return training && gradient_chunk_ > 0 && batch > gradient_chunk_ && !node.schema->couples_samples;
}

void Executor::run_kernel_forward(const Instr& ins, int64_t batch, KernelContext& ctx, bool continues_step,
                                  std::vector<TensorView>& inputs, std::vector<TensorView>& params) {
  const Node& node = graph_.node(ins.node);
  inputs.clear();
  params.clear();
  for (int t : ins.in) inputs.push_back(view(t, batch));
  for (int pi : node_params_[static_cast<size_t>(ins.node)]) params.push_back(param_value(pi));
  OpKernel& kernel = *kernels_[static_cast<size_t>(ins.node)];
  const bool relu = relu_into_[static_cast<size_t>(ins.node)];
  const bool reduced = node.schema->batch_reduced();  // a loss or metric: one value for the batch
  const TensorView out = view(ins.out[0], batch);
  float& value = scalars_[static_cast<size_t>(ins.node)];
  // The chunk's value added to the step's (a loss or metric), one float
  // addition at a time, in chunk order.
  auto fold = [&](bool first_of_step) {
    float v = 0;
    memory_->copy_to_host(&v, out.data, sizeof v);
    value = first_of_step ? v : value + v;
  };
  if (!runs_by_chunk(node, batch, ctx.training)) {
    kernel.forward(ForwardArgs{node, inputs, params, out, ctx, relu});
    if (reduced) fold(!continues_step);
    return;
  }
  if (kernel.forward_handles_gradient_chunks(node) && !reduced) {
    kernel.forward(ForwardArgs{node, inputs, params, out, ctx, relu, gradient_chunk_});
    return;
  }
  std::vector<TensorView> chunk_inputs(inputs);
  const int64_t offset = ctx.sample_offset;
  for_each_gradient_chunk(batch, gradient_chunk_, continues_step, [&](int64_t first, int64_t count, bool add) {
    for (size_t k = 0; k < inputs.size(); ++k) chunk_inputs[k] = batch_rows(inputs[k], first, count);
    ctx.sample_offset = offset + first;
    kernel.forward(ForwardArgs{node, chunk_inputs, params, reduced ? out : batch_rows(out, first, count), ctx, relu});
    if (reduced) fold(!add);
  });
  ctx.sample_offset = offset;
}

void Executor::recompute(const Instr& ins, int64_t batch, KernelContext& ctx, std::vector<TensorView>& inputs,
                         std::vector<TensorView>& params) {
  const std::vector<int>& mine = node_params_[static_cast<size_t>(ins.node)];
  saved_state_.clear();
  for (int pi : mine) {
    const Parameter& p = params_[static_cast<size_t>(pi)];
    if (p.spec.trained) continue;
    const size_t at = saved_state_.size();
    saved_state_.resize(at + static_cast<size_t>(p.spec.shape.numel()));
    memory_->copy_to_host(saved_state_.data() + at, p.value.data(), (saved_state_.size() - at) * sizeof(float));
  }
  const uint64_t seed = ctx.seed;
  ctx.seed ^= recompute_seed_xor_;
  run_kernel_forward(ins, batch, ctx, false, inputs, params);
  ctx.seed = seed;
  size_t at = 0;
  for (int pi : mine) {
    Parameter& p = params_[static_cast<size_t>(pi)];
    if (p.spec.trained) continue;
    const auto count = static_cast<size_t>(p.spec.shape.numel());
    memory_->copy_from_host(p.value.data(), saved_state_.data() + at, count * sizeof(float));
    at += count;
  }
}

void Executor::run_kernel_backward(const Instr& ins, int64_t batch, KernelContext& ctx, bool accumulate) {
  const Node& node = graph_.node(ins.node);
  std::vector<TensorView> inputs, params, d_inputs, d_params;
  for (int in : node.inputs) {
    TensorView v{nullptr, graph_.node(in).out_shape_for(batch)};
    if (node.schema->backward_needs_inputs) v = view(in, batch);
    inputs.push_back(v);
  }
  for (int pi : node_params_[static_cast<size_t>(ins.node)]) {
    const Parameter& p = params_[static_cast<size_t>(pi)];
    params.push_back(param_value(pi));
    // State (not trained) has no gradient: a null view.
    d_params.push_back(p.spec.trained ? param_grad(pi) : TensorView{nullptr, p.spec.shape});
  }
  for (size_t k = 0; k < ins.out.size(); ++k) {
    if (ins.out[k] >= 0) {
      d_inputs.push_back(view(ins.out[k], batch));
    } else {
      d_inputs.push_back(TensorView{nullptr, graph_.node(node.inputs[k]).out_shape_for(batch)});
    }
  }
  TensorView out{nullptr, node.out_shape_for(batch)};
  if (node.schema->backward_needs_output) out = view(ins.node, batch);
  TensorView d_out = view(ins.in[0], batch);
  OpKernel& kernel = *kernels_[static_cast<size_t>(ins.node)];
  const bool relu = relu_gradient_into_[static_cast<size_t>(ins.node)];
  if (!runs_by_chunk(node, batch, true)) {
    kernel.backward(BackwardArgs{node, inputs, params, out, d_out, d_inputs, d_params, accumulate, ctx, relu});
    return;
  }
  // A loss's output and its gradient are one value for the batch.
  const bool reduced = node.schema->batch_reduced();
  if (kernel.backward_handles_gradient_chunks(node) && !reduced) {
    kernel.backward(
        BackwardArgs{node, inputs, params, out, d_out, d_inputs, d_params, accumulate, ctx, relu, gradient_chunk_});
    return;
  }
  // Chunks of gradient_chunk_ samples, in order, each adding its whole
  // gradient to what the chunks before it left (core/exec/kernel.h).
  std::vector<TensorView> chunk_inputs(inputs), chunk_d_inputs(d_inputs);
  const int64_t offset = ctx.sample_offset;
  for_each_gradient_chunk(batch, gradient_chunk_, accumulate, [&](int64_t first, int64_t count, bool add) {
    for (size_t k = 0; k < inputs.size(); ++k) chunk_inputs[k] = batch_rows(inputs[k], first, count);
    for (size_t k = 0; k < d_inputs.size(); ++k) chunk_d_inputs[k] = batch_rows(d_inputs[k], first, count);
    ctx.sample_offset = offset + first;
    kernel.backward(BackwardArgs{node, chunk_inputs, params, reduced ? out : batch_rows(out, first, count),
                                 reduced ? d_out : batch_rows(d_out, first, count), chunk_d_inputs, d_params, add, ctx,
                                 relu});
  });
  ctx.sample_offset = offset;
}

bool Executor::stages(const Instr& ins) const {
  return (ins.kind == InstrKind::kForward || ins.kind == InstrKind::kBackward) &&
         !offload_.by_node[static_cast<size_t>(ins.node)].empty();
}

uint64_t Executor::fetch(const Instr& ins, float* share, bool accumulate, const StepInfo& info) {
  auto* base = reinterpret_cast<char*>(share);
  CopyQueue::Batch batch;
  // A backward that adds to earlier micro-batches' gradients reads them.
  const bool grads = ins.kind == InstrKind::kBackward && accumulate;
  const std::vector<int>& mine = node_params_[static_cast<size_t>(ins.node)];
  for (const StagedParam& s : offload_.by_node[static_cast<size_t>(ins.node)]) {
    const Parameter& p = params_[static_cast<size_t>(mine[static_cast<size_t>(s.param)])];
    const size_t bytes = static_cast<size_t>(p.spec.shape.numel()) * sizeof(float);
    batch.copies.push_back(CopyQueue::Copy{base + s.value_offset, p.value.data(), bytes});
    if (grads) batch.copies.push_back(CopyQueue::Copy{base + s.grad_offset, p.grad.data(), bytes});
  }
  batch.traced = trace_ != nullptr;
  batch.event = TraceEvent{0, 0, info.step, info.micro, ins.node, TraceKind::kFetch};
  return copies_->submit(std::move(batch));
}

uint64_t Executor::write_back(const Instr& ins, const float* share, const StepInfo& info) {
  const auto* base = reinterpret_cast<const char*>(share);
  CopyQueue::Batch batch;
  batch.to_device = false;
  const std::vector<int>& mine = node_params_[static_cast<size_t>(ins.node)];
  for (const StagedParam& s : offload_.by_node[static_cast<size_t>(ins.node)]) {
    const Parameter& p = params_[static_cast<size_t>(mine[static_cast<size_t>(s.param)])];
    const size_t bytes = static_cast<size_t>(p.spec.shape.numel()) * sizeof(float);
    batch.copies.push_back(CopyQueue::Copy{p.grad.data(), base + s.grad_offset, bytes});
  }
  batch.traced = trace_ != nullptr;
  batch.event = TraceEvent{0, 0, info.step, info.micro, ins.node, TraceKind::kWriteBack};
  return copies_->submit(std::move(batch));
}

void Executor::point_at_share(int node, float* share) {
  const std::vector<int>& mine = node_params_[static_cast<size_t>(node)];
  for (const StagedParam& s : offload_.by_node[static_cast<size_t>(node)]) {
    const auto pi = static_cast<size_t>(mine[static_cast<size_t>(s.param)]);
    // Offsets are whole cache lines, so whole floats.
    staged_value_[pi] = share ? share + s.value_offset / sizeof(float) : nullptr;
    staged_grad_[pi] = share ? share + s.grad_offset / sizeof(float) : nullptr;
  }
}

TensorView Executor::param_value(int pi) const {
  const Parameter& p = params_[static_cast<size_t>(pi)];
  float* staged = staged_value_[static_cast<size_t>(pi)];
  return staged ? TensorView{staged, p.spec.shape} : p.value_view();
}

TensorView Executor::param_grad(int pi) const {
  const Parameter& p = params_[static_cast<size_t>(pi)];
  float* staged = staged_grad_[static_cast<size_t>(pi)];
  return staged ? TensorView{staged, p.spec.shape} : p.grad_view();
}

void Executor::finish_step(const StepInfo& info) {
  // Copies from host memory may still be reading the slots (and the
  // coordinator's input slot): the device finishes before they go back.
  memory_->synchronize();
  if (channel_) channel_->release(info.step);
}

void Executor::finish_micro(const StepInfo& info) {
  memory_->synchronize();
  if (channel_) channel_->release(info.step, info.micro);
}

void Executor::apply_optimizer(int64_t step) {
  assert(optimizer_);
  auto t0 = std::chrono::steady_clock::now();
  const int64_t trace_t0 = trace_ ? trace_now_ns() : 0;
  // An offloading device updates on the host: the host's clock times it.
  const bool device_timed = (profiling_ || trace_) && timer_ && !host_optimizer_;
  if (device_timed) timer_->clear();
  const int interval = device_timed ? timer_->start() : -1;
  // Offloaded gradients are on the host once the pass returned; on a device
  // that queues its work, what it still does may write them too (a
  // data-parallel worker's read-back of the summed gradients).
  if (host_optimizer_ && !host_) memory_->synchronize();
  std::vector<TensorView> state;
  for (Parameter& p : params_) {
    if (!p.spec.trained) continue;  // state the kernels update themselves
    state.clear();
    for (DeviceBuffer& s : p.state) state.push_back(s.view(p.spec.shape));
    OptimizerKernel& optimizer = &memory_of(p) == offload_memory_.get() ? *host_optimizer_ : *optimizer_;
    optimizer.update(p.value_view(), p.grad_view(), state, step, *pool_);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (interval >= 0) {
    timer_->stop(interval);
    seconds = timer_->collect().at(static_cast<size_t>(interval));  // waits for the update
  }
  if (trace_) {
    if (interval < 0) memory_->synchronize();  // the update's time, not its enqueueing
    const int64_t end = interval >= 0 ? trace_t0 + device_ns(seconds) : trace_now_ns();
    trace_->add(TraceEvent{trace_t0, end, step - 1, -1, -1, TraceKind::kOptimizer});
  }
  if (!profiling_) return;
  profile_.add("optimizer", ProfileDirection::kOptimizer, seconds, 0,
               (host_optimizer_ ? host_optimizer_ : optimizer_)->implementation());
}

}  // namespace devmap
