// Executor: runs a Program on one device with that device's kernels. It
// owns the parameters of its ops, their gradients and optimizer state, and
// one arena per buffer set in which every activation and gradient buffer
// has its place, shared by buffers that are never alive at once
// (core/plan/tensor_allocations.h), sized once for the largest batch (no
// allocation in the steady state), all drawn from the device's
// DeviceMemory, which enforces its memory_limit. core/plan/memory_plan.h
// predicts these allocations byte for byte. A tensor's buffer holds its
// value only within its lifetime: after a step, output() is valid for the
// tensors that live to its end (those read in place or staged).
//
// Host memory the executor does not own (the coordinator's input and output
// segments, the slots of cut edges) is used in place on a device whose
// memory the CPU can address; on any other device (a GPU) each such tensor
// gets a device staging buffer, and the executor copies between it and the
// host memory: inputs before the forward pass, received slots on arrival,
// sent slots just before the send, outputs after the forward pass.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/exec/channel.h"
#include "core/exec/copy_queue.h"
#include "core/exec/device_memory.h"
#include "core/exec/kernel.h"
#include "core/exec/profile.h"
#include "core/exec/trace.h"
#include "core/plan/fused_relu.h"
#include "core/plan/offload_layout.h"
#include "core/plan/partition.h"
#include "core/plan/pipeline_schedule.h"
#include "core/plan/program.h"

namespace devmap {

struct StepInfo {
  int64_t step = 0;           // 0-based training step
  int64_t sample_offset = 0;  // first sample of this micro-batch within the step
  int64_t batch_total = 0;    // samples in the whole step
  bool training = false;
  int micro = 0;  // micro-batch within the step (the tag of its cut-edge tensors)
  // A micro-batch after the first of the same step or batch: the losses and
  // metrics computed here add to the earlier micro-batches' (scalar()).
  bool continues_step = false;
};

// One parameter tensor of one op, named "op.param" (as in checkpoints).
struct Parameter {
  std::string name;
  int node = -1;
  ParamSpec spec;
  DeviceBuffer value, grad;         // device memory (grad: none for state, spec.trained false)
  std::vector<DeviceBuffer> state;  // optimizer state, each shaped like value (none for state)
  TensorView value_view() const { return value.view(spec.shape); }
  TensorView grad_view() const { return grad.view(spec.shape); }
};

class Executor {
 public:
  // `part` (may be null: run the whole program here) selects this device's
  // share of `program`: its ops, parameters and the sends and receives of
  // its cut edges, which go through `channel` (needed when part has edges).
  // Every buffer comes from `memory` (null: unlimited host memory owned by
  // the executor); parameters are allocated here, the rest in reserve().
  // With `offload`, the trained parameters, their gradients and optimizer
  // state live in host memory of the executor's own
  // (DeviceMemory::make_offload_memory: pinned on a GPU), outside
  // `memory`'s limit, and stream through the staging pool of
  // core/plan/offload_layout.h, allocated here from `memory`: the device's
  // copy queue (DeviceMemory::make_copy_queue: a thread on the CPU, a copy
  // stream on a GPU) fetches the next op's parameters while this op
  // computes and writes gradients back after each backward; a pass returns
  // once its gradients are on the host. apply_optimizer() updates them
  // there, on the host (KernelFactory::make_host_optimizer: the bits of the
  // device's own optimizer).
  Executor(const Graph& graph, Program program, const KernelFactory& kernels, const OptimizerConfig& optimizer,
           int threads, uint64_t seed, const DeviceProgram* part = nullptr, const std::vector<Edge>* edges = nullptr,
           Channel* channel = nullptr, DeviceMemory* memory = nullptr, bool offload = false);
  ~Executor();

  // Declares that op `node`'s output lives in host memory bound later with
  // bind_output (an input op fed by the coordinator, or an output it reads).
  // Call before reserve().
  void set_external(int node);
  // Allocates every buffer for batches of up to `max_batch` samples, in
  // `sets` buffer sets: each activation and activation gradient once per
  // micro-batch a pipeline keeps in flight (use_set picks one). Throws
  // devmap::Error when the device's memory_limit is exceeded.
  void reserve(int64_t max_batch, int sets = 1);
  int64_t max_batch() const { return max_batch_; }
  // A test hook: with false, the next reserve() fuses no relu into its
  // conv2d nor its gradient into the max_pool2d after it
  // (core/plan/fused_relu.h), which the memory plan assumes it does.
  void set_fuse_relus(bool fuse) { fuse_relus_ = fuse; }
  // A test hook: recomputes (core/plan/recompute.h) run with the seed XOR
  // `bits` (0, the default: the executor's seed, so their random draws, and
  // bits, are those of the forward pass).
  void set_recompute_seed_xor(uint64_t bits) { recompute_seed_xor_ = bits; }
  // The relus fused into their conv2d since reserve().
  const std::vector<FusedRelu>& fused_relus() const { return fused_; }
  // The relus whose backward the max_pool2d after them runs, since reserve().
  const std::vector<FusedReluGradient>& fused_relu_gradients() const { return fused_gradients_; }
  // The buffer set the next passes, bind_output, output and scalar use.
  void use_set(int set);
  int sets() const { return std::max(1, static_cast<int>(stored_.size())); }

  // Sets the initial parameters: counter-based random values keyed by
  // (seed, "op.param"), identical in any process.
  void init_parameters();

  // Points the output of an external op (set_external) at host memory
  // holding at least max_batch() samples. Not for tensors that cross
  // devices: the channel binds those.
  void bind_output(int node, float* data);
  // The current buffer of an op's output, for `batch` samples, in device
  // memory (host memory on the CPU).
  TensorView output(int node, int64_t batch) const;

  void forward(int64_t batch, const StepInfo& info);
  // accumulate: add parameter gradients to those of earlier micro-batches of
  // the same step instead of overwriting them.
  void backward(int64_t batch, const StepInfo& info, bool accumulate);
  // One segment (core/plan/pipeline_schedule.h) of the forward or backward pass:
  // forward() and backward() run all of them in order.
  void run_segment(bool backward, int segment, int64_t batch, const StepInfo& info, bool accumulate);
  int segments(bool backward) const { return static_cast<int>((backward ? bsegs_ : fsegs_).size()); }
  // Whether forward segment `segment` computes op `node` here.
  bool segment_computes(int segment, int node) const;
  // One optimizer update of every parameter; step is 1-based.
  void apply_optimizer(int64_t step);

  // The value of a loss or metric op after forward(): its gradient chunks'
  // values (each the chunk's share of the step, rounded to float) added in
  // chunk order, one float addition at a time, after those of the step's
  // earlier micro-batches when StepInfo::continues_step. So a step has the
  // same loss bits whole, as micro-batches of whole chunks, pipelined, or
  // (with the replicas' ordered sum) as replicas of one chunk each.
  float scalar(int node) const { return scalars_[static_cast<size_t>(node)]; }
  // Copies of a parameter's value or gradient in host memory (the gradient
  // of state, ParamSpec::trained false, reads as zeros).
  void read_parameter(const Parameter& p, std::vector<float>& value, std::vector<float>* grad = nullptr) const;
  DeviceMemory& memory() { return *memory_; }
  // The memory that holds `p`'s value, gradient and optimizer state: the
  // host memory of an offloaded parameter, else memory().
  DeviceMemory& memory_of(const Parameter& p) const;
  // Times every instruction from now on (--profile). Kernels and gradient
  // sums are timed in device time where the device has a timer
  // (DeviceMemory::make_timer: a GPU's events), else by the host's clock;
  // sends and receives always by the host's clock (they include the wait).
  void enable_profile();
  const Profile& profile() const { return profile_; }
  // Records every instruction, slot wait and optimizer update into `trace`
  // from now on (null: stop); the caller owns it (--trace).
  void set_trace(TraceBuffer* trace);
  // A training pass of more than `samples` samples calls each op's kernel
  // once per consecutive chunk of `samples`, forward and backward (except
  // ops that couple their samples, as batch_norm does, and losses and
  // metrics, which reduce over the batch); each chunk's backward adds its
  // whole gradient to what the chunks before it left. (A kernel whose
  // forward_handles_gradient_chunks() or backward_handles_gradient_chunks()
  // is true gets the batch in one forward or backward call and gives each
  // chunk the bits of its own call.) A chunk is then
  // computed by the same calls, of the same shapes, wherever it runs: in
  // the whole batch, in a micro-batch or a replica of a multiple of
  // `samples`. So those give the same bits whatever kernels, blockings or
  // remainder paths a library picks for a shape on this CPU.
  // 0: the whole batch in one call.
  void set_gradient_chunk(int64_t samples) { gradient_chunk_ = samples; }
  // Called after each instruction that run() finishes, on its thread (a
  // data-parallel worker hands each gradient over once its op's backward
  // has made it). Empty: nothing is called.
  void set_after_instruction(std::function<void(const Instr&)> f) { after_instruction_ = std::move(f); }
  // Seconds spent waiting for other devices (a tensor to receive, a free
  // slot to send into) since the last call; the rest of a step is the
  // device's own work.
  double take_wait_seconds() { return std::exchange(wait_seconds_, 0.0); }

  // Whether op `node` runs here.
  bool is_local(int node) const { return local_[static_cast<size_t>(node)]; }
  // Waits for the device, then hands back every slot received for the step
  // (end of the step).
  void finish_step(const StepInfo& info);
  // The same for one micro-batch of a pipelined step (info.micro).
  void finish_micro(const StepInfo& info);

  // What the executor is running, readable from any thread while it runs
  // (the worker's watchdog reports it): the instruction in progress, or
  // none between passes, and how many instructions have finished so far.
  struct Progress {
    bool running = false;
    InstrKind kind = InstrKind::kForward;
    int node = -1;  // the op, or the edge id for kSend/kRecv
    uint64_t finished = 0;
  };
  Progress progress() const;
  // "conv2 backward", "recv conv1->pool1" (edge names), "idle".
  std::string describe(const Progress& p) const;

  std::vector<Parameter>& parameters() { return params_; }
  const std::vector<Parameter>& parameters() const { return params_; }
  const Graph& graph() const { return graph_; }
  const Program& program() const { return program_; }
  ThreadPool& pool() { return *pool_; }

 private:
  Shape tensor_shape(int tensor, int64_t batch) const;
  TensorView view(int tensor, int64_t batch) const;
  KernelContext context(const StepInfo& info);
  // Runs instrs[begin, end).
  void run(const std::vector<Instr>& instrs, int begin, int end, int64_t batch, const StepInfo& info, bool accumulate);
  void copy_staged_inputs(int64_t batch);
  void copy_staged_outputs(int64_t batch);
  // `inputs` and `params`: the pass's scratch lists, refilled here.
  void run_kernel_forward(const Instr& ins, int64_t batch, KernelContext& ctx, bool continues_step,
                          std::vector<TensorView>& inputs, std::vector<TensorView>& params);
  void run_kernel_backward(const Instr& ins, int64_t batch, KernelContext& ctx, bool accumulate);
  // A recompute in the backward pass: the op's forward with the pass's
  // step and samples, into its output's backward buffer; the op's state
  // (ParamSpec::trained false, batch_norm's running statistics) is put back
  // as the forward pass left it.
  void recompute(const Instr& ins, int64_t batch, KernelContext& ctx, std::vector<TensorView>& inputs,
                 std::vector<TensorView>& params);
  // ins.out[0] = the sum of the gradient partials ins.in.
  void sum_grads(const Instr& ins, int64_t batch);
  // Hands edge ins.node's tensor to the channel (a device the host cannot
  // address first copies it into a slot).
  void send_edge(const Instr& ins, int64_t batch, const StepInfo& info);
  // Waits for edge ins.node's tensor: a host device reads it in its slot,
  // another copies it into its buffer.
  void receive_edge(const Instr& ins, int64_t batch, const StepInfo& info);
  // On a host device: binds each tensor of `ins` that leaves the device
  // to a slot of its edge, which the instruction then writes directly.
  void bind_outgoing_slots(const Instr& ins, int64_t batch, const StepInfo& info);
  // Calls `wait` (a channel call that blocks: acquire or receive), adds the
  // time it blocked to wait_seconds_ and, with `traced`, a slot-wait trace
  // event on `edge`. Returns its slot.
  template <typename Wait>
  float* timed_wait(int edge, const StepInfo& info, bool traced, Wait&& wait);
  // An instruction's clocks (--profile and --trace), started before it runs
  // and recorded after.
  struct InstrTiming {
    std::chrono::steady_clock::time_point host_start{};
    int64_t trace_start_ns = 0;
    int interval = -1;  // timer_'s, or -1
  };
  InstrTiming start_timing(const Instr& ins);
  void finish_timing(const Instr& ins, const InstrTiming& timing, const StepInfo& info);
  // Whether a pass of `batch` samples calls `node`'s kernel once per
  // gradient chunk (set_gradient_chunk).
  bool runs_by_chunk(const Node& node, int64_t batch, bool training) const;
  // The node's kernel's implementation name (--profile) for its forward or
  // backward, or empty; "+relu" ends a forward that fuses its relu and a
  // backward that fuses the relu's before it.
  std::string implementation(int node, bool backward) const;
  void record(const Instr& ins, int64_t batch, double seconds);
  void record_pass(int64_t batch);
  // Offload: whether `ins` reads offloaded parameters; queues the copy of
  // them (with accumulate, for a backward, their gradients too) into its
  // op's share of the staging pool at `share`, or their gradients back, and
  // returns its ticket; points the parameters' views at `share` (null: back
  // at their own memory).
  bool stages(const Instr& ins) const;
  uint64_t fetch(const Instr& ins, float* share, bool accumulate, const StepInfo& info);
  uint64_t write_back(const Instr& ins, const float* share, const StepInfo& info);
  void point_at_share(int node, float* share);
  TensorView param_value(int pi) const;
  TensorView param_grad(int pi) const;
  // Sets fused_, fused_gradients_ and what follows from them (alias_of_,
  // relu_into_, relu_gradient_into_, fused_backward_).
  void plan_fused_relus();
  static TraceKind trace_kind(InstrKind kind);
  void trace_slot_wait(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to, int edge,
                       const StepInfo& info);

  const Graph& graph_;
  Program program_;
  std::vector<Instr> forward_, backward_;  // this device's instructions
  std::vector<Segment> fsegs_, bsegs_;     // their segments
  std::vector<bool> local_;                // per node
  std::vector<bool> uses_;                 // per tensor
  std::vector<int> edge_of_;               // per tensor: the cut edge it crosses, or -1
  const std::vector<Edge>* edges_ = nullptr;
  Channel* channel_ = nullptr;
  bool owns_loss_ = false;
  bool profiling_ = false;
  TraceBuffer* trace_ = nullptr;
  std::function<void(const Instr&)> after_instruction_;
  double wait_seconds_ = 0;
  Profile profile_;
  std::unique_ptr<DeviceTimer> timer_;  // device time (--profile and --trace on a GPU), or null
  // The instructions of the pass being profiled: their device interval
  // (timer_), or -1 and the host's seconds.
  struct Timed {
    const Instr* ins;
    int interval;
    double seconds;
  };
  std::vector<Timed> timed_;
  // The trace slices of the pass that the device times: their start (the
  // host's clock when the work was queued), filled with the interval's
  // device seconds once the pass is collected.
  struct PendingSlice {
    TraceEvent event;
    int interval;
  };
  std::vector<PendingSlice> pending_slices_;
  // (kind << 32 | node) of the instruction in progress, or -1; and the
  // count of finished instructions. Written by run(), read by progress().
  std::atomic<int64_t> running_{-1};
  std::atomic<uint64_t> finished_{0};
  uint64_t seed_;
  std::unique_ptr<ThreadPool> pool_;
  // Declared before every DeviceBuffer member: buffers release into it.
  std::unique_ptr<DeviceMemory> own_memory_;
  DeviceMemory* memory_ = nullptr;
  // Offload: the host memory of the offloaded parameters (no limit), their
  // layout in the staging pool, the pool (in memory_) and, per parameter,
  // its value and gradient in the pool while its op's instruction runs
  // (null: its own memory).
  std::unique_ptr<DeviceMemory> offload_memory_;
  OffloadLayout offload_;
  DeviceBuffer staging_;
  std::vector<float*> staged_value_, staged_grad_;
  bool host_ = true;                                // memory_->host_accessible()
  std::vector<std::unique_ptr<OpKernel>> kernels_;  // per node (null where none)
  std::unique_ptr<OptimizerKernel> optimizer_;
  // Offload: the optimizer of the offloaded parameters (host pointers), or null.
  std::unique_ptr<OptimizerKernel> host_optimizer_;
  std::vector<Parameter> params_;
  std::vector<std::vector<int>> node_params_;  // node -> indices into params_
  // One tensor arena per buffer set (core/plan/tensor_allocations.h).
  std::vector<DeviceBuffer> arenas_;
  // The current buffer set, per tensor: its buffer (its place in the set's
  // arena, or null), the host memory it uses in place (or null), the host
  // memory behind a staging buffer (or null). The other sets wait in
  // stored_ (use_set swaps them in).
  std::vector<float*> buffers_;
  std::vector<float*> bound_;
  std::vector<float*> host_of_;
  // Per tensor: the backward-pass buffer of a recomputed output, or null;
  // view() takes it over buffers_ while a backward pass runs.
  std::vector<float*> recomputed_;
  bool in_backward_ = false;
  uint64_t recompute_seed_xor_ = 0;
  std::vector<float> saved_state_;  // recompute()'s copy of the op's state
  struct BufferSet {
    std::vector<float*> buffers, bound, host_of, recomputed;
  };
  std::vector<BufferSet> stored_;  // sets but the current one, by index (the current one's entry is empty)
  int current_set_ = 0;
  std::vector<bool> external_;  // per node: set_external
  bool fuse_relus_ = true;
  std::vector<FusedRelu> fused_;  // set in reserve
  // per tensor: the tensor whose buffer it is (a fused relu's conv2d; a fused
  // relu gradient's output gradient: its input gradient), or -1
  std::vector<int> alias_of_;
  std::vector<bool> relu_into_;                     // per node: a conv2d that writes its fused relu's output
  std::vector<FusedReluGradient> fused_gradients_;  // set in reserve
  std::vector<bool> relu_gradient_into_;  // per node: a max_pool2d whose backward writes its relu's input gradient
  std::vector<bool> fused_backward_;      // per node: a relu whose backward that max_pool2d runs
  std::vector<float> scalars_;            // per node: a loss's or metric's value (scalar())
  std::vector<int> staged_inputs_, staged_outputs_;  // external ops behind staging buffers (set in reserve)
  DeviceBuffer workspace_;
  std::vector<const float*> parts_;  // kSumGrads scratch
  size_t workspace_bytes_ = 0;
  int64_t max_batch_ = 0;
  int64_t gradient_chunk_ = 0;
  // Last: stopped (after its queued copies) before any buffer it copies goes.
  std::unique_ptr<CopyQueue> copies_;
};

}  // namespace devmap
