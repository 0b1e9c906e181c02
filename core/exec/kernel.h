// The abstract kernel interface the executor runs. Implementations live in
// kernels/<device kind>/ and are created by a KernelFactory; core never
// links them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/exec/lr_schedule.h"
#include "core/exec/thread_pool.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"

namespace devmap {

// Per-call context. Kernels must produce the same bits for the same inputs,
// seed, step and pool size: every reduction has a fixed order.
struct KernelContext {
  ThreadPool* pool = nullptr;
  float* workspace = nullptr;  // at least workspace_bytes() of this kernel
  size_t workspace_bytes = 0;
  uint64_t seed = 0;
  int64_t step = 0;           // training step (0-based); keys dropout masks
  int64_t sample_offset = 0;  // index of this (micro-)batch's first sample in the step's batch
  int64_t batch_total = 0;    // samples in the whole step (losses average over it)
  bool training = false;
};

struct ForwardArgs {
  const Node& node;
  std::span<const TensorView> inputs;
  std::span<const TensorView> params;
  TensorView output;  // written whole
  KernelContext& ctx;
  // Write max(y, 0) instead of y: the relu after the op, fused (with the bits
  // a relu kernel would give). Asked only of kernels whose fuses_relu() is
  // true (core/plan/fused_relu.h says when).
  bool relu_output = false;
  // Positive: the batch is several gradient chunks of this many samples
  // (the last may hold fewer), given at once to a kernel whose
  // forward_handles_gradient_chunks() is true, which gives each chunk the
  // bits of one call on it alone. 0: the call is one chunk. ctx.sample_offset
  // is then the batch's first sample's, for every chunk.
  int64_t gradient_chunk = 0;
};

struct BackwardArgs {
  const Node& node;
  std::span<const TensorView> inputs;  // forward inputs (data may be null when the schema does not keep them)
  std::span<const TensorView> params;
  TensorView output;    // forward output (null unless backward_needs_output)
  TensorView d_output;  // gradient of the loss w.r.t. the output
  // Gradients w.r.t. inputs, written whole (overwrite); a view with null
  // data means that input needs no gradient.
  std::span<const TensorView> d_inputs;
  // Gradients w.r.t. params: overwritten when accumulate is false, added to
  // when true (later gradient chunks and micro-batches of one step). A CPU
  // kernel adds this call's whole gradient, rounded to float once, to each
  // element (g + (a + b + ...), never (g + a) + b), so a chunk's gradient
  // has the same bits wherever the chunk is computed: in a whole batch
  // (Executor::set_gradient_chunk calls the kernel once per chunk), a
  // micro-batch or a data-parallel replica. (The dense kernel's GEMM does so
  // while a chunk fits one of its library's K blocks, a few hundred samples;
  // past that it adds block by block.)
  std::span<const TensorView> d_params;
  bool accumulate = false;
  KernelContext& ctx;
  // inputs[0] is a relu's output and d_inputs[0] receives the gradient of
  // that relu's input: the input gradient, with +0.0 wherever inputs[0] is
  // not above zero (the bits the relu's backward would give). Asked only of
  // kernels whose fuses_relu_gradient() is true (core/plan/fused_relu.h
  // says when).
  bool relu_input_gradient = false;
  // Positive: the batch is several gradient chunks of this many samples
  // (the last may hold fewer), given at once to a kernel whose
  // backward_handles_gradient_chunks() is true, which gives each chunk's
  // input gradients the bits of one call on it alone and adds the chunks'
  // parameter gradients in order, each as its own call would (the first
  // stored unless accumulate). 0: the call is one chunk. ctx.sample_offset
  // is then the batch's first sample's, for every chunk.
  int64_t gradient_chunk = 0;
};

// The gradient chunks of a batch, in order: fn(first, count, add) for
// samples [first, first + count), chunks of `chunk` samples (0: the whole
// batch as one), `add` false only for the first chunk of a pass that does
// not accumulate. A batch of no samples is one empty chunk.
template <class Fn>
void for_each_gradient_chunk(int64_t batch, int64_t chunk, bool accumulate, const Fn& fn) {
  if (chunk <= 0) chunk = std::max<int64_t>(batch, 1);
  for (int64_t first = 0; first == 0 || first < batch; first += chunk)
    fn(first, std::min(chunk, batch - first), accumulate || first > 0);
}

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void forward(const ForwardArgs& args) = 0;
  // Only called for ops whose schema is differentiable.
  virtual void backward(const BackwardArgs& args) = 0;
  // Scratch memory for a batch of `batch` samples, shared by all kernels of
  // a worker (the executor allocates the maximum once).
  virtual size_t workspace_bytes(const Node& /*node*/, int64_t /*batch*/) const { return 0; }
  // The implementation that runs for the node in this process, as --profile
  // names it ("winograd/avx512", "openblas:Cooperlake"); empty: not named.
  virtual std::string implementation(const Node& /*node*/) const { return {}; }
  // The same for backward(), where it runs another implementation.
  virtual std::string backward_implementation(const Node& node) const { return implementation(node); }
  // Whether forward() honours ForwardArgs::relu_output.
  virtual bool fuses_relu() const { return false; }
  // Whether backward() honours BackwardArgs::relu_input_gradient.
  virtual bool fuses_relu_gradient() const { return false; }
  // Whether forward() takes a training batch of several gradient chunks at
  // once (ForwardArgs::gradient_chunk) and gives each chunk the bits of one
  // call on it: the executor then calls it once per batch, so the kernel
  // may read its weights once instead of once a chunk.
  virtual bool forward_handles_gradient_chunks(const Node& /*node*/) const { return false; }
  // The same for backward() (BackwardArgs::gradient_chunk): the kernel may
  // then read its weights, and load and store its parameter gradients, once
  // a batch instead of once a chunk.
  virtual bool backward_handles_gradient_chunks(const Node& /*node*/) const { return false; }
};

// Optimizer hyper-parameters, shared by every device kind.
struct OptimizerConfig {
  enum class Kind { kSgd, kMomentum, kAdam } kind = Kind::kSgd;
  double learning_rate = 0.01;
  double momentum = 0.9;  // kMomentum: v = momentum*v + g; p -= lr*v (PyTorch's SGD with momentum)
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // kAdam (PyTorch's Adam)
  double weight_decay = 0.0;                          // L2, added to the gradient
  LrSchedule schedule;                                // learning_rate is its base rate

  // The learning rate of update `step` (1-based, global): what every
  // optimizer kernel uses in place of learning_rate.
  double rate_at(int64_t step) const { return learning_rate_at(learning_rate, schedule, step); }
};

const char* optimizer_kind_name(OptimizerConfig::Kind k);
// State tensors per parameter (sgd 0, momentum 1, adam 2): every device's
// OptimizerKernel::state_count() agrees with it.
int optimizer_state_count(OptimizerConfig::Kind k);

// Applies one update to one parameter tensor. State tensors (velocity, Adam
// moments) are zero-initialised by the caller, state_count() of them, each
// shaped like the parameter.
class OptimizerKernel {
 public:
  virtual ~OptimizerKernel() = default;
  virtual int state_count() const = 0;
  // step is 1-based (Adam's bias correction).
  virtual void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
                      ThreadPool& pool) = 0;
  // As OpKernel::implementation ("momentum/avx512"); empty: not named.
  virtual std::string implementation() const { return {}; }
};

// Creates the kernels of one device kind. Throws devmap::Error naming the
// known ops when the device has no kernel for an op.
class KernelFactory {
 public:
  virtual ~KernelFactory() = default;
  virtual std::unique_ptr<OpKernel> make_kernel(const std::string& op) const = 0;
  virtual std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config) const = 0;
  // The optimizer for parameters offloaded to host memory (the executor's
  // `offload`): update() takes host pointers and runs on the host, with the
  // bits of make_optimizer's. The default is make_optimizer's, for a
  // factory whose kernels take host pointers (the CPU's).
  virtual std::unique_ptr<OptimizerKernel> make_host_optimizer(const OptimizerConfig& config) const {
    return make_optimizer(config);
  }
};

}  // namespace devmap
