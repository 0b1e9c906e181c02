// Helpers for the CPU kernel tests: building Nodes the way Graph::infer
// does, deterministic random fills, and OpHarness, which owns every buffer
// an op's forward and backward need and calls the kernel the way the
// executor does (passing null data for what the schema does not keep).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/random.h"
#include "core/exec/kernel.h"
#include "core/exec/thread_pool.h"
#include "core/graph/graph.h"
#include "core/graph/tensor.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "tests/kernels/gradient_check.h"

namespace devmap::test {

// A Node of `op` with every schema attribute set (`attrs` override the
// schema's defaults), its shapes and params inferred from the per-sample
// input shapes.
inline Node make_node(const std::string& op, const std::string& name, std::vector<Shape> input_shapes,
                      const std::map<std::string, AttrValue>& attrs = {}) {
  Node n;
  n.name = name;
  n.schema = find_op(op);
  if (n.schema == nullptr) throw std::invalid_argument("unknown op " + op);
  for (const AttrSpec& spec : n.schema->attrs) n.attrs.set(spec.name, spec.default_value);
  for (const auto& [key, value] : attrs) {
    bool known = false;
    for (const AttrSpec& spec : n.schema->attrs) known = known || spec.name == key;
    if (!known) throw std::invalid_argument(op + " has no attribute " + key);
    n.attrs.set(key, value);
  }
  n.input_shapes = std::move(input_shapes);
  n.out_shape = n.schema->infer_shape(n.attrs, n.input_shapes);
  if (n.schema->params) n.params = n.schema->params(n.attrs, n.input_shapes);
  return n;
}

// Fills x with U[lo, hi) values, a pure function of (seed, element index).
inline void fill_uniform(std::span<float> x, uint64_t seed, float lo, float hi) {
  const PhiloxKey key = philox_key(seed, "test");
  for (size_t i = 0; i < x.size(); ++i) x[i] = lo + (hi - lo) * uniform_at(key, i);
}

inline std::span<float> span_of(const Buffer& b) {
  return {b.data(), static_cast<size_t>(b.size())};
}
inline std::vector<float> to_vector(const Buffer& b) {
  return {b.data(), b.data() + b.size()};
}

inline bool same_bits(const Buffer& a, const Buffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size()) * sizeof(float)) == 0;
}

// Runs one op's kernel over owned buffers. The context starts in training
// mode with seed 42, step 0, sample_offset 0 and batch_total = batch; tests
// change `ctx` freely (pool and workspace stay valid).
class OpHarness {
 public:
  OpHarness(Node n, int64_t batch_size, int threads = 1, std::unique_ptr<OpKernel> k = nullptr)
      : node(std::move(n)), batch(batch_size), pool(threads) {
    kernel = k ? std::move(k) : CpuKernelFactory().make_kernel(node.op());
    for (const Shape& s : node.input_shapes) {
      inputs.emplace_back(s.with_batch(batch).numel());
      d_inputs.emplace_back(s.with_batch(batch).numel());
    }
    for (const ParamSpec& p : node.params) {
      params.emplace_back(p.shape.numel());
      d_params.emplace_back(p.shape.numel());
    }
    output.resize(output_shape().numel());
    d_output.resize(output_shape().numel());
    const size_t ws = kernel->workspace_bytes(node, batch);
    workspace.resize(static_cast<int64_t>((ws + sizeof(float) - 1) / sizeof(float)));
    ctx.pool = &pool;
    ctx.workspace = workspace.data();
    ctx.workspace_bytes = ws;
    ctx.seed = 42;
    ctx.batch_total = batch;
    ctx.training = true;
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i)
      want_input_grad.push_back(node.schema->input_gets_grad(i));
    pass_inputs_to_backward = node.schema->backward_needs_inputs;
    pass_output_to_backward = node.schema->backward_needs_output;
  }

  Shape input_shape(int i) const { return node.input_shapes[static_cast<size_t>(i)].with_batch(batch); }
  Shape output_shape() const { return node.out_shape_for(batch); }

  TensorView input(int i) const { return inputs[static_cast<size_t>(i)].view(input_shape(i)); }
  TensorView param(int i) const {
    return params[static_cast<size_t>(i)].view(node.params[static_cast<size_t>(i)].shape);
  }
  TensorView out() const { return output.view(output_shape()); }

  // relu_output: ask the kernel to fuse the relu after it (ForwardArgs).
  void forward(bool relu_output = false) { forward_rows(0, batch, relu_output); }

  // One call on samples [first, first + count) of the buffers, as the
  // executor calls a kernel once per gradient chunk (core/exec/executor.h).
  void forward_rows(int64_t first, int64_t count, bool relu_output = false) {
    std::vector<TensorView> in, par;
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) in.push_back(batch_rows(input(i), first, count));
    for (int i = 0; i < static_cast<int>(params.size()); ++i) par.push_back(param(i));
    const int64_t offset = ctx.sample_offset;
    ctx.sample_offset = offset + first;
    ForwardArgs args{node, in, par, batch_rows(out(), first, count), ctx, relu_output};
    kernel->forward(args);
    ctx.sample_offset = offset;
  }

  // One call on the whole batch as gradient chunks of `chunk` samples
  // (ForwardArgs::gradient_chunk), as the executor calls a kernel whose
  // forward_handles_gradient_chunks() is true.
  void forward_chunks(int64_t chunk) {
    std::vector<TensorView> in, par;
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) in.push_back(input(i));
    for (int i = 0; i < static_cast<int>(params.size()); ++i) par.push_back(param(i));
    kernel->forward(ForwardArgs{node, in, par, out(), ctx, false, chunk});
  }

  // Like the executor: inputs/output have null data unless the schema keeps
  // them (pass_*_to_backward); d_inputs have null data where want_input_grad
  // is false.
  void backward(bool accumulate = false) { backward_rows(0, batch, accumulate); }

  // gradient_chunk: BackwardArgs::gradient_chunk (0: the rows are one chunk).
  void backward_rows(int64_t first, int64_t count, bool accumulate = false, int64_t gradient_chunk = 0) {
    std::vector<TensorView> in, par, d_in, d_par;
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
      TensorView v = batch_rows(input(i), first, count);
      if (!pass_inputs_to_backward) v.data = nullptr;
      in.push_back(v);
      TensorView d = batch_rows(d_inputs[static_cast<size_t>(i)].view(input_shape(i)), first, count);
      if (!want_input_grad[static_cast<size_t>(i)]) d.data = nullptr;
      d_in.push_back(d);
    }
    for (int i = 0; i < static_cast<int>(params.size()); ++i) {
      par.push_back(param(i));
      TensorView d = d_params[static_cast<size_t>(i)].view(node.params[static_cast<size_t>(i)].shape);
      if (!node.params[static_cast<size_t>(i)].trained) d.data = nullptr;  // state: no gradient
      d_par.push_back(d);
    }
    TensorView y = batch_rows(out(), first, count);
    if (!pass_output_to_backward) y.data = nullptr;
    const int64_t offset = ctx.sample_offset;
    ctx.sample_offset = offset + first;
    BackwardArgs args{node,          in,    par,        y,   batch_rows(d_output.view(output_shape()), first, count),
                      d_in,          d_par, accumulate, ctx, relu_input_gradient,
                      gradient_chunk};
    kernel->backward(args);
    ctx.sample_offset = offset;
  }

  // One call on the whole batch as gradient chunks of `chunk` samples, as
  // the executor calls a kernel whose backward_handles_gradient_chunks() is
  // true.
  void backward_chunks(int64_t chunk, bool accumulate = false) { backward_rows(0, batch, accumulate, chunk); }

  Node node;
  int64_t batch;
  ThreadPool pool;
  std::unique_ptr<OpKernel> kernel;
  KernelContext ctx;
  std::vector<Buffer> inputs, params, d_inputs, d_params;
  Buffer output, d_output, workspace;
  std::vector<bool> want_input_grad;  // default: the schema's input_gets_grad
  bool pass_inputs_to_backward;       // default: the schema's backward_needs_inputs
  bool pass_output_to_backward;       // default: the schema's backward_needs_output
  bool relu_input_gradient = false;   // BackwardArgs::relu_input_gradient
};

struct NamedGradCheck {
  std::string what;  // "input 0", "param weight"
  GradCheckResult result;
};

// Checks every gradient the op's backward produces (inputs with
// want_input_grad, all trained params) for the loss L = sum(r * y), r random with
// `seed`, at the harness's current inputs and params. With flip_sign the
// analytic gradients are negated before the comparison (a deliberately
// wrong backward, which the check must reject).
inline std::vector<NamedGradCheck> check_op_gradients(OpHarness& h, uint64_t seed, bool flip_sign = false,
                                                      const GradCheckOptions& options = {}) {
  fill_uniform(span_of(h.d_output), seed, -1.0f, 1.0f);
  const std::vector<float> r = to_vector(h.d_output);
  h.forward();
  h.backward();
  auto analytic = [&](const Buffer& grad) {
    std::vector<float> g = to_vector(grad);
    if (flip_sign)
      for (float& v : g) v = -v;
    return g;
  };
  const std::function<double()> loss = [&] {
    h.forward();
    double l = 0.0;
    for (size_t i = 0; i < r.size(); ++i) l += static_cast<double>(r[i]) * h.output.data()[i];
    return l;
  };
  std::vector<NamedGradCheck> results;
  for (size_t i = 0; i < h.inputs.size(); ++i) {
    if (!h.want_input_grad[i]) continue;
    const std::vector<float> g = analytic(h.d_inputs[i]);
    results.push_back({"input " + std::to_string(i), check_gradient(span_of(h.inputs[i]), g, loss, options)});
  }
  for (size_t i = 0; i < h.params.size(); ++i) {
    if (!h.node.params[i].trained) continue;  // state (running statistics): no gradient
    const std::vector<float> g = analytic(h.d_params[i]);
    results.push_back({"param " + h.node.params[i].name, check_gradient(span_of(h.params[i]), g, loss, options)});
  }
  return results;
}

// EXPECTs that every gradient passes (or, with flip_sign, that every one fails).
inline void expect_gradients(OpHarness& h, uint64_t seed, bool flip_sign = false,
                             const GradCheckOptions& options = {}) {
  const std::vector<NamedGradCheck> results = check_op_gradients(h, seed, flip_sign, options);
  EXPECT_FALSE(results.empty());
  for (const NamedGradCheck& c : results) {
    if (flip_sign) {
      EXPECT_FALSE(c.result.passed) << h.node.op() << " " << c.what << " with a flipped sign: " << c.result.summary();
    } else {
      EXPECT_TRUE(c.result.passed) << h.node.op() << " " << c.what << ": " << c.result.summary();
    }
  }
}

}  // namespace devmap::test
