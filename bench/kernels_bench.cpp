// Google Benchmark of the CPU kernels on the reference model's shapes
// (batch 64). Arg: threads (pool and OpenBLAS); the conv2 benchmarks take a
// second, the algorithm (0 gemm, 1 winograd, 2 onednn; conv1 0 or 2). BM_ResnetConv* run
// three of the ResNet's convolutions at its batch of 128: Args threads,
// layer (0: a first-stage 3x3, 16 -> 16 channels at 28x28; 1: the 3x3
// stride-2 16 -> 32 at the second stage's start; 2: a third-stage 3x3,
// 64 -> 64 at 7x7), algorithm. Reports GFLOP/s counted from the
// definition's FLOPs (for Winograd, the effective rate).
// BM_TrainStep / BM_Predict run the whole reference CNN through the
// Executor (a training step at batch 64, a forward pass at batch 1000) and
// report images/s plus the mean milliseconds of every op's forward (".f")
// and backward (".b") and of the optimizer ("opt"), from a timing wrapper
// around each kernel.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <vector>

#include "coordinator/config/config.h"
#include "core/exec/executor.h"
#include "core/graph/graph.h"
#include "core/plan/program.h"
#include "kernels/cpu/blas.h"
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
    cpu::pin_blas_to_one_thread();
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
  // Like a training step of the default train.gradient_chunk: a kernel
  // that takes every chunk at once gets them in one call (as the executor
  // calls it), any other the whole batch as one chunk.
  void backward() {
    Shape ys = node.out_shape_for(in_views[0].shape[0]);
    const int64_t chunk = kernel->backward_handles_gradient_chunks(node) ? TrainConfig{}.gradient_chunk : 0;
    kernel->backward(BackwardArgs{node, in_views, param_views, output.view(ys), d_output.view(ys), din_views,
                                  dparam_views, false, ctx, false, chunk});
  }
};

constexpr int64_t kBatch = 64;

void report(benchmark::State& state, const OpFixture& f, double factor, int64_t batch = kBatch) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(f.node.forward_flops(batch) * factor * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const char* algorithm_arg(int64_t arg) {
  return arg == 0 ? "gemm" : arg == 1 ? "winograd" : "onednn";
}

OpFixture conv2(const benchmark::State& state) {
  const std::string algorithm = algorithm_arg(state.range(1));
  return OpFixture(
      "conv2d", Shape{32, 14, 14},
      {{"filters", int64_t{64}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}, {"algorithm", algorithm}}, kBatch,
      static_cast<int>(state.range(0)));
}
void BM_Conv2Forward(benchmark::State& state) {
  OpFixture f = conv2(state);
  for (auto _ : state) f.forward();
  report(state, f, 1.0);
}
void BM_Conv2Backward(benchmark::State& state) {
  OpFixture f = conv2(state);
  for (auto _ : state) f.backward();
  report(state, f, 2.0);
}
constexpr int64_t kResnetBatch = 128;

OpFixture resnet_conv(const benchmark::State& state) {
  struct Layer {
    int64_t channels, size, filters, stride;
  };
  constexpr Layer kLayers[] = {{16, 28, 16, 1}, {16, 28, 32, 2}, {64, 7, 64, 1}};
  const Layer& l = kLayers[state.range(1)];
  return OpFixture("conv2d", Shape{l.channels, l.size, l.size},
                   {{"filters", l.filters},
                    {"kernel", int64_t{3}},
                    {"stride", l.stride},
                    {"padding", int64_t{1}},
                    {"bias", false},
                    {"algorithm", std::string(algorithm_arg(state.range(2)))}},
                   kResnetBatch, static_cast<int>(state.range(0)));
}
void BM_ResnetConvForward(benchmark::State& state) {
  OpFixture f = resnet_conv(state);
  for (auto _ : state) f.forward();
  report(state, f, 1.0, kResnetBatch);
}
void BM_ResnetConvBackward(benchmark::State& state) {
  OpFixture f = resnet_conv(state);
  for (auto _ : state) f.backward();
  report(state, f, 2.0, kResnetBatch);
}
// Every algorithm that runs the layer (Winograd needs stride 1).
void resnet_conv_args(benchmark::internal::Benchmark* b) {
  for (int64_t threads : {1, 2})
    for (int64_t layer : {0, 1, 2})
      for (int64_t algorithm : {0, 1, 2})
        if (!(layer == 1 && algorithm == 1)) b->Args({threads, layer, algorithm});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

OpFixture conv1(const benchmark::State& state) {
  return OpFixture("conv2d", Shape{1, 28, 28},
                   {{"filters", int64_t{32}},
                    {"kernel", int64_t{5}},
                    {"padding", int64_t{2}},
                    {"algorithm", std::string(algorithm_arg(state.range(1)))}},
                   kBatch, static_cast<int>(state.range(0)));
}
void BM_Conv1Forward(benchmark::State& state) {
  OpFixture f = conv1(state);
  for (auto _ : state) f.forward();
  report(state, f, 1.0);
}
// conv1's backward in training: the weight and bias gradients only (its
// input is the data, which takes no gradient).
void BM_Conv1Backward(benchmark::State& state) {
  OpFixture f = conv1(state);
  f.din_views[0].data = nullptr;
  for (auto _ : state) f.backward();
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
// pool2: rows of 7 windows, shorter than any vector.
void BM_Pool2Backward(benchmark::State& state) {
  OpFixture f("max_pool2d", Shape{64, 14, 14}, {}, kBatch, static_cast<int>(state.range(0)));
  f.forward();
  for (auto _ : state) f.backward();
  report(state, f, 1.0);
}

// The ResNet's widest batch_norm (bn1: 16 channels of 28x28, batch 128),
// training. Reports GB/s of the bytes it must move: forward reads x twice
// (the statistics, then the normalisation) and writes y; backward reads x
// and dy twice and writes dx.
OpFixture resnet_bn1(const benchmark::State& state) {
  return OpFixture("batch_norm", Shape{16, 28, 28}, {}, kResnetBatch, static_cast<int>(state.range(0)));
}
void report_bytes(benchmark::State& state, const OpFixture& f, double passes) {
  const double bytes = passes * 4.0 * static_cast<double>(f.in_views[0].shape.numel());
  state.counters["GB"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_ResnetBn1Forward(benchmark::State& state) {
  OpFixture f = resnet_bn1(state);
  for (auto _ : state) f.forward();
  report_bytes(state, f, 3.0);
}
void BM_ResnetBn1Backward(benchmark::State& state) {
  OpFixture f = resnet_bn1(state);
  for (auto _ : state) f.backward();
  report_bytes(state, f, 5.0);
}

// ---- whole-model step with a per-op breakdown ----

using Clock = std::chrono::steady_clock;
std::map<std::string, double>& op_seconds() {
  static std::map<std::string, double> m;
  return m;
}

class TimedKernel final : public OpKernel {
 public:
  explicit TimedKernel(std::unique_ptr<OpKernel> k) : k_(std::move(k)) {}
  void forward(const ForwardArgs& args) override {
    const auto t0 = Clock::now();
    k_->forward(args);
    op_seconds()[args.node.name + ".f"] += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  void backward(const BackwardArgs& args) override {
    const auto t0 = Clock::now();
    k_->backward(args);
    op_seconds()[args.node.name + ".b"] += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  size_t workspace_bytes(const Node& node, int64_t batch) const override { return k_->workspace_bytes(node, batch); }

 private:
  std::unique_ptr<OpKernel> k_;
};

class TimedFactory final : public KernelFactory {
 public:
  std::unique_ptr<OpKernel> make_kernel(const std::string& op) const override {
    return std::make_unique<TimedKernel>(inner_.make_kernel(op));
  }
  std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config) const override {
    return inner_.make_optimizer(config);
  }

 private:
  CpuKernelFactory inner_;
};

Node model_node(const std::string& name, const std::string& op, std::vector<int> inputs,
                std::vector<std::pair<std::string, AttrValue>> attrs = {}) {
  Node n;
  n.name = name;
  n.schema = find_op(op);
  for (const AttrSpec& s : n.schema->attrs) n.attrs.set(s.name, s.default_value);
  for (auto& [k, v] : attrs) n.attrs.set(k, v);
  n.inputs = std::move(inputs);
  n.device = "cpu:0";
  return n;
}

// The reference CNN of configs/fashion_mnist_cnn.yaml.
Graph reference_cnn() {
  Graph g;
  const std::vector<std::pair<std::string, AttrValue>> k5 = {{"kernel", int64_t{5}}, {"padding", int64_t{2}}};
  auto conv = [&](int64_t filters) {
    auto a = k5;
    a.emplace_back("filters", filters);
    return a;
  };
  g.add(model_node("image", "input", {}, {{"shape", std::vector<int64_t>{1, 28, 28}}}));
  g.add(model_node("label", "labels", {}, {{"classes", int64_t{10}}}));
  g.add(model_node("conv1", "conv2d", {0}, conv(32)));
  g.add(model_node("relu1", "relu", {2}));
  g.add(model_node("pool1", "max_pool2d", {3}, {{"kernel", int64_t{2}}}));
  g.add(model_node("conv2", "conv2d", {4}, conv(64)));
  g.add(model_node("relu2", "relu", {5}));
  g.add(model_node("pool2", "max_pool2d", {6}, {{"kernel", int64_t{2}}}));
  g.add(model_node("flat", "flatten", {7}));
  g.add(model_node("fc1", "dense", {8}, {{"units", int64_t{1024}}}));
  g.add(model_node("relu3", "relu", {9}));
  g.add(model_node("logits", "dense", {10}, {{"units", int64_t{10}}}));
  g.add(model_node("loss", "softmax_cross_entropy", {11, 1}));
  g.infer();
  return g;
}

// Random pixels, and random labels when the program has them (the inference
// program of BM_Predict has no label tensor: its view has no data).
void fill_model_inputs(Executor& ex, const Graph& g, int64_t batch) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pixel(0, 1);
  TensorView x = ex.output(g.find("image"), batch), y = ex.output(g.find("label"), batch);
  for (int64_t i = 0; i < x.numel(); ++i) x[i] = pixel(rng);
  if (y.data != nullptr)
    for (int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<float>(rng() % 10);
}

void report_ops(benchmark::State& state, int64_t batch) {
  const double iters = static_cast<double>(state.iterations());
  for (const auto& [name, sec] : op_seconds()) state.counters[name] = sec / iters * 1e3;
  state.counters["img/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TrainStep(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  cpu::pin_blas_to_one_thread();
  const Graph g = reference_cnn();
  TimedFactory factory;
  OptimizerConfig opt;
  opt.kind = OptimizerConfig::Kind::kMomentum;
  Executor ex(g, build_training_program(g), factory, opt, threads, 1);
  ex.reserve(kBatch);
  ex.init_parameters();
  fill_model_inputs(ex, g, kBatch);
  const StepInfo info{0, 0, kBatch, true};
  int64_t step = 0;
  auto one_step = [&] {
    ex.forward(kBatch, info);
    ex.backward(kBatch, info, false);
    const auto t0 = Clock::now();
    ex.apply_optimizer(++step);
    op_seconds()["opt"] += std::chrono::duration<double>(Clock::now() - t0).count();
  };
  for (int i = 0; i < 3; ++i) one_step();  // warm-up
  op_seconds().clear();
  for (auto _ : state) one_step();
  report_ops(state, kBatch);
  op_seconds().clear();
}

void BM_Predict(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  constexpr int64_t kPredictBatch = 1000;
  cpu::pin_blas_to_one_thread();
  const Graph g = reference_cnn();
  TimedFactory factory;
  Executor ex(g, build_inference_program(g, {g.find("logits")}), factory, OptimizerConfig{}, threads, 1);
  ex.reserve(kPredictBatch);
  ex.init_parameters();
  fill_model_inputs(ex, g, kPredictBatch);
  const StepInfo info{0, 0, kPredictBatch, false};
  ex.forward(kPredictBatch, info);  // warm-up
  op_seconds().clear();
  for (auto _ : state) ex.forward(kPredictBatch, info);
  report_ops(state, kPredictBatch);
  op_seconds().clear();
}

// With --benchmark_repetitions=N each also reports "_min" (every counter's
// minimum over the repetitions): on a busy machine the least disturbed run.
double min_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}
double max_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

// Whole-model benchmarks: 1 and 2 threads, with min and max beside the mean.
void whole_model(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
  b->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);
}

BENCHMARK(BM_TrainStep)->Apply(whole_model);
BENCHMARK(BM_Predict)->Apply(whole_model);
BENCHMARK(BM_Conv1Forward)->ArgsProduct({{1, 2}, {0, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv1Backward)->ArgsProduct({{1, 2}, {0, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2Forward)->ArgsProduct({{1, 2}, {0, 1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2Backward)->ArgsProduct({{1, 2}, {0, 1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ResnetConvForward)->Apply(resnet_conv_args);
BENCHMARK(BM_ResnetConvBackward)->Apply(resnet_conv_args);
BENCHMARK(BM_Fc1Forward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fc1Backward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pool1Forward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pool1Backward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pool2Backward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ResnetBn1Forward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ResnetBn1Backward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devmap

BENCHMARK_MAIN();
