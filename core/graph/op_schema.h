// OpSchema: everything the planner knows about an op without running it:
// its inputs and attributes, shape inference, parameters, FLOPs, and what
// its gradient rule needs. Kernels live in kernels/ and are looked up by
// (op, device kind); schemas are device independent.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/base/device_kind.h"
#include "core/graph/attrs.h"
#include "core/graph/file_dtype.h"
#include "core/graph/shape.h"

namespace devmap {

// How a parameter is initialised. Values are counter-based random numbers
// keyed by (seed, "op.param", element index): see core/base/random.h.
enum class ParamInit {
  kUniformFanIn,  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default for conv and linear
  kZeros,
  kOnes,
};

struct ParamSpec {
  std::string name;  // "weight", "bias"
  Shape shape;       // PyTorch layouts: conv OIHW, dense [out, in]
  int64_t fan_in = 1;
  ParamInit init = ParamInit::kUniformFanIn;
  // false: state the op's kernels update themselves (batch_norm's running
  // statistics), saved and loaded with the parameters under its name, but
  // never given a gradient or optimizer state. Listed after the trained
  // parameters; a kernel's backward gets null gradient views for them.
  bool trained = true;
  // How the weights file stores it. kI64: an integer count (state only),
  // float32 in memory, int64 in the file as in PyTorch.
  FileDtype stored_as = FileDtype::kF32;
};

// Where an op sits in a job.
enum class OpRole {
  kCompute,     // an ordinary op
  kImageInput,  // fed by the coordinator with a batch of images
  kLabelInput,  // fed by the coordinator with a batch of class indices (as floats)
  kLoss,        // a scalar (mean over the batch) that training minimises
  kMetric,      // a scalar reported to the user, never differentiated
};

struct OpSchema {
  std::string name;
  std::string summary;
  int num_inputs = 1;
  bool variadic_inputs = false;  // takes num_inputs or more inputs (concat)
  std::vector<AttrSpec> attrs;
  OpRole role = OpRole::kCompute;

  // Per-sample output shape from the per-sample input shapes (batch-level for
  // kLoss and kMetric, whose output is one scalar for the whole batch).
  // Throws devmap::Error (kInvalidInput) naming the shapes that do not fit;
  // the graph prefixes the op's source location.
  std::function<Shape(const Attrs&, const std::vector<Shape>& in)> infer_shape;
  // The op's parameters, or none.
  std::function<std::vector<ParamSpec>(const Attrs&, const std::vector<Shape>& in)> params;
  // Multiply-adds count as 2 FLOPs; per sample, forward pass only.
  std::function<double(const Attrs&, const std::vector<Shape>& in, const Shape& out)> forward_flops;
  // Scratch memory, in bytes, that the op's kernels use at `batch` samples
  // (null: none). The memory plan reserves the largest over a device's ops;
  // a device's kernels must not need more (tests compare the plan with the
  // allocators' measured peak). Monotone in the batch.
  std::function<uint64_t(const Attrs&, const std::vector<Shape>& in, const Shape& out, int64_t batch)> workspace_bytes;

  // Gradient rule. An op with differentiable == false stops gradients.
  bool differentiable = true;
  std::vector<bool> grad_inputs;       // which inputs receive a gradient (empty: all)
  bool backward_needs_inputs = true;   // keeps its inputs alive for backward
  bool backward_needs_output = false;  // keeps its output alive for backward
  double backward_flops_factor = 2.0;  // backward FLOPs = factor x forward
  // The part of that factor the input gradients take (dense and conv2d: 1 of
  // their 2), which a backward that computes no input gradient skips.
  double input_gradient_flops_factor = 0.0;
  // Input 1 must be the labels op with as many classes as input 0 has
  // elements (softmax_cross_entropy, accuracy); the config checks it.
  bool second_input_is_labels = false;

  // Capabilities. couples_samples: each sample's output depends on the other
  // samples of the batch it is given (batch_norm's batch statistics when
  // training), so micro-batches change what it computes. has_state: some of
  // its ParamSpecs are not trained (ParamSpec::trained).
  bool couples_samples = false;
  bool has_state = false;
  // The attribute that counts the op's outputs along its first per-sample
  // dimension (dense "units", conv2d "filters") when the op may be split
  // across devices by them (core/graph/split_op.h): every parameter's first
  // dimension is that count, and each output depends on its own rows of the
  // parameters alone. Empty: the op cannot be split.
  std::string split_attr;

  // The device kinds with a kernel for this op (fed ops: those whose workers
  // feed it), declared by every schema (tested: none is empty). Each kernel
  // factory's supports() agrees with it (tested), and placement refuses an op
  // on a device of a kind it lacks before any worker starts.
  std::vector<DeviceKind> device_kinds;

  bool batch_reduced() const { return role == OpRole::kLoss || role == OpRole::kMetric; }
  // An op the coordinator feeds each step (input, labels): it has no inputs
  // and no kernel; no device computes it, and the tensor it names is written
  // into a device's staging buffer or an edge ring by the coordinator.
  bool fed_by_coordinator() const { return role == OpRole::kImageInput || role == OpRole::kLabelInput; }
  bool runs_on(DeviceKind kind) const {
    for (DeviceKind k : device_kinds)
      if (k == kind) return true;
    return false;
  }
  bool accepts_inputs(int64_t n) const { return variadic_inputs ? n >= num_inputs : n == num_inputs; }
  // "2 inputs", "2 or more inputs", "no inputs".
  std::string inputs_wanted() const {
    if (num_inputs == 0 && !variadic_inputs) return "no inputs";
    return std::to_string(num_inputs) + (variadic_inputs ? " or more" : "") + (num_inputs == 1 ? " input" : " inputs");
  }
  bool input_gets_grad(int i) const {
    return differentiable && (grad_inputs.empty() || grad_inputs[static_cast<size_t>(i)]);
  }
};

// The registry of op schemas. find_op returns nullptr for an unknown name.
const OpSchema* find_op(const std::string& name);
std::vector<std::string> known_op_names();  // sorted

}  // namespace devmap
