// Google Benchmark of the CPU kernels on the reference model's shapes
// (batch 64). Arg: pool and OpenBLAS threads. Reports GFLOP/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/graph.h"
#include "kernels/cpu/cpu_kernel_factory.h"

namespace devmap {
namespace {

struct OpFixture {
  Node node;
  std::vector<Buffer> inputs, params, d_params, d_inputs;
  Buffer output, d_output, workspace;
  std::unique_ptr<OpKernel> kernel;
  std::unique_ptr<ThreadPool> pool;
  KernelContext ctx;
  std::vector<TensorView> in_views, param_views, dparam_views, din_views;

  OpFixture(const std::string& op, Shape in, std::vector<std::pair<std::string, AttrValue>> attrs, int64_t batch,
            int threads) {
    node.name = op + "_bench";
    node.schema = find_op(op);
    for (const AttrSpec& s : node.schema->attrs) node.attrs.set(s.name, s.default_value);
    for (auto& [k, v] : attrs) node.attrs.set(k, v);
    node.input_shapes = {in};
    node.out_shape = node.schema->infer_shape(node.attrs, node.input_shapes);
    if (node.schema->params) node.params = node.schema->params(node.attrs, node.input_shapes);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    auto filled = [&](const Shape& s) {
      Buffer b(s.numel());
      for (int64_t i = 0; i < s.numel(); ++i) b.data()[i] = u(rng);
      return b;
    };
    Shape xs = in.with_batch(batch), ys = node.out_shape_for(batch);
    inputs.push_back(filled(xs));
    d_inputs.push_back(filled(xs));
    in_views = {inputs[0].view(xs)};
    din_views = {d_inputs[0].view(xs)};
    for (const ParamSpec& p : node.params) {
      params.push_back(filled(p.shape));
      d_params.push_back(filled(p.shape));
      param_views.push_back(params.back().view(p.shape));
      dparam_views.push_back(d_params.back().view(p.shape));
    }
    output = filled(ys);
    d_output = filled(ys);
    kernel = CpuKernelFactory().make_kernel(op);
    size_t ws = kernel->workspace_bytes(node, batch);
    workspace.resize(static_cast<int64_t>(ws / 4 + 1));
    pool = std::make_unique<ThreadPool>(threads);
    set_cpu_threads(threads);
    ctx.pool = pool.get();
    ctx.workspace = workspace.data();
    ctx.workspace_bytes = ws;
    ctx.batch_total = batch;
    ctx.training = true;
  }
  void forward() {
    kernel->forward(
        ForwardArgs{node, in_views, param_views, output.view(node.out_shape_for(in_views[0].shape[0])), ctx});
  }
  void backward() {
    Shape ys = node.out_shape_for(in_views[0].shape[0]);
    kernel->backward(BackwardArgs{node, in_views, param_views, output.view(ys), d_output.view(ys), din_views,
                                  dparam_views, false, ctx});
  }
};

constexpr int64_t kBatch = 64;

void report(benchmark::State& state, const OpFixture& f, double factor) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(f.node.forward_flops(kBatch) * factor * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Conv2Forward(benchmark::State& state) {
  OpFixture f("conv2d", Shape{32, 14, 14}, {{"filters", int64_t{64}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}},
              kBatch, static_cast<int>(state.range(0)));
  for (auto _ : state) f.forward();
  report(state, f, 1.0);
}
void BM_Conv2Backward(benchmark::State& state) {
  OpFixture f("conv2d", Shape{32, 14, 14}, {{"filters", int64_t{64}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}},
              kBatch, static_cast<int>(state.range(0)));
  for (auto _ : state) f.backward();
  report(state, f, 2.0);
}
void BM_Conv1Forward(benchmark::State& state) {
  OpFixture f("conv2d", Shape{1, 28, 28}, {{"filters", int64_t{32}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}},
              kBatch, static_cast<int>(state.range(0)));
  for (auto _ : state) f.forward();
  report(state, f, 1.0);
}
void BM_Fc1Forward(benchmark::State& state) {
  OpFixture f("dense", Shape{3136}, {{"units", int64_t{1024}}}, kBatch, static_cast<int>(state.range(0)));
  for (auto _ : state) f.forward();
  report(state, f, 1.0);
}
void BM_Fc1Backward(benchmark::State& state) {
  OpFixture f("dense", Shape{3136}, {{"units", int64_t{1024}}}, kBatch, static_cast<int>(state.range(0)));
  for (auto _ : state) f.backward();
  report(state, f, 2.0);
}
void BM_Pool1Forward(benchmark::State& state) {
  OpFixture f("max_pool2d", Shape{32, 28, 28}, {}, kBatch, static_cast<int>(state.range(0)));
  for (auto _ : state) f.forward();
  report(state, f, 1.0);
}
void BM_Pool1Backward(benchmark::State& state) {
  OpFixture f("max_pool2d", Shape{32, 28, 28}, {}, kBatch, static_cast<int>(state.range(0)));
  f.forward();
  for (auto _ : state) f.backward();
  report(state, f, 1.0);
}

BENCHMARK(BM_Conv1Forward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2Forward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2Backward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fc1Forward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fc1Backward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pool1Forward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pool1Backward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmap

BENCHMARK_MAIN();
