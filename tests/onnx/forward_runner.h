// Runs an imported graph's forward in this process on the CPU kernels, op
// by op in graph order, as the executor does when predicting (training
// false: batch_norm uses its running statistics, dropout is off).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "coordinator/onnx/onnx_import.h"
#include "core/exec/thread_pool.h"
#include "core/graph/tensor.h"
#include "kernels/cpu/cpu_kernel_factory.h"

namespace devmap::test {

// The output of every op for `batch` samples; `inputs` feeds the input ops
// (by node index), each batch x per-sample values.
inline std::vector<Buffer> run_forward(const onnx_io::ImportedModel& m, int64_t batch,
                                       const std::map<int, std::vector<float>>& inputs) {
  const Graph& g = m.graph;
  std::vector<Buffer> out(static_cast<size_t>(g.size()));
  ThreadPool pool(1);
  CpuKernelFactory factory;
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    Buffer& y = out[static_cast<size_t>(i)];
    y.resize(n.out_shape_for(batch).numel());
    if (n.schema->fed_by_coordinator()) {
      const std::vector<float>& x = inputs.at(i);
      std::copy(x.begin(), x.end(), y.data());
      continue;
    }
    std::vector<Buffer> params;
    std::vector<TensorView> in, par;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      in.push_back(out[static_cast<size_t>(n.inputs[k])].view(n.input_shapes[k].with_batch(batch)));
    for (const ParamSpec& p : n.params) {
      const onnx_io::HostTensor& w = m.weights.at(n.name + "." + p.name);
      params.emplace_back(p.shape.numel());
      std::copy(w.values.begin(), w.values.end(), params.back().data());
    }
    for (size_t k = 0; k < params.size(); ++k) par.push_back(params[k].view(n.params[k].shape));
    auto kernel = factory.make_kernel(n.op());
    const size_t ws = std::max(kernel->workspace_bytes(n, batch), static_cast<size_t>(n.workspace_bytes(batch)));
    Buffer workspace(static_cast<int64_t>((ws + sizeof(float) - 1) / sizeof(float)));
    KernelContext ctx;
    ctx.pool = &pool;
    ctx.workspace = workspace.data();
    ctx.workspace_bytes = ws;
    ctx.batch_total = batch;
    ctx.training = false;
    kernel->forward(ForwardArgs{n, in, par, y.view(n.out_shape_for(batch)), ctx});
  }
  return out;
}

}  // namespace devmap::test
