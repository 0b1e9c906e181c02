// The memory plan against the executor's real allocations, the staging path
// of devices the CPU cannot address, and micro-batched training steps.
#include "core/plan/memory_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/base/error.h"
#include "core/exec/executor.h"
#include "core/exec/host_memory.h"
#include "core/plan/tensor_allocations.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

// Host memory that claims the CPU cannot address it, so that the executor
// takes the staging path a GPU takes, and that holds the math libraries'
// workspace from its start as a GPU's CudaMemory does (cuBLAS's); counts
// the copies it is asked for.
class StagedHostMemory : public HostMemory {
 public:
  StagedHostMemory(std::string device, uint64_t limit) : HostMemory(std::move(device), limit) {
    library_ =
        DeviceBuffer(*this, static_cast<int64_t>(library_workspace_bytes(false) / sizeof(float)), "cuBLAS workspace");
  }
  bool host_accessible() const override { return false; }
  void copy_from_host(void* d, const void* s, size_t n) override {
    ++copies;
    HostMemory::copy_from_host(d, s, n);
  }
  void copy_to_host(void* d, const void* s, size_t n) override {
    ++copies;
    HostMemory::copy_to_host(d, s, n);
  }
  int copies = 0;

 private:
  DeviceBuffer library_;
};

// A channel for executors that only allocate: any use is a test bug.
class UnusedChannel : public Channel {
  float* acquire(int, int64_t, size_t, int) override { throw std::logic_error("unused"); }
  void send(int, int64_t, int) override { throw std::logic_error("unused"); }
  float* receive(int, int64_t, int) override { throw std::logic_error("unused"); }
  void release(int64_t, int) override {}
};

Graph split_cnn() {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) {
    Node& n = g.node(i);
    if (n.schema->fed_by_coordinator()) continue;
    n.device = i <= g.find("pool2") ? "cpu:0" : "cpu:1";
  }
  return g;
}

std::vector<int> inputs_of(const Graph& g) {
  return {g.find("image"), g.find("label")};
}

PlanInputs plan_inputs_for(const Graph& g, const Program& p, const Partition& part, bool host, int states,
                           std::vector<int> external) {
  PlanInputs in;
  in.graph = &g;
  in.program = &p;
  in.partition = &part;
  for (const std::string& d : part.devices) in.devices.push_back(PlanDevice{d, 0, host, nullptr});
  in.optimizer_states = states;
  in.external = std::move(external);
  return in;
}

struct PlanCase {
  bool training;
  bool host;
  int64_t batch;
  int sets = 1;  // buffer sets (micro-batches a pipeline keeps in flight)
};

class PlanMatchesExecutor : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanMatchesExecutor, ByteForByte) {
  const PlanCase c = GetParam();
  Graph g = split_cnn();
  std::vector<int> outputs;
  if (!c.training) outputs = {g.find("logits")};
  Program program = c.training ? build_training_program(g) : build_inference_program(g, outputs);
  Partition part = partition_program(g, program);
  OptimizerConfig opt;
  opt.kind = OptimizerConfig::Kind::kAdam;
  std::vector<int> external = inputs_of(g);
  external.insert(external.end(), outputs.begin(), outputs.end());
  PlanInputs in = plan_inputs_for(g, program, part, c.host, c.training ? optimizer_state_count(opt.kind) : 0, external);
  for (PlanDevice& d : in.devices) d.sets = c.sets;
  MemoryPlan plan = plan_memory(in, c.batch);
  ASSERT_EQ(plan.devices.size(), 2u);
  CpuKernelFactory kernels;
  UnusedChannel channel;
  for (const DeviceMemoryPlan& d : plan.devices) {
    std::unique_ptr<HostMemory> mem =
        c.host ? std::make_unique<HostMemory>(d.device, 0) : std::make_unique<StagedHostMemory>(d.device, 0);
    Executor ex(g, program, kernels, opt, 1, 1, &part.program_for(d.device), &part.edges, &channel, mem.get());
    for (int n : external)
      if (n < g.size() && (g.node(n).schema->fed_by_coordinator() || ex.is_local(n))) ex.set_external(n);
    ex.reserve(c.batch, c.sets);
    // The worker charges the transport slots; the executor allocates the rest.
    EXPECT_EQ(mem->peak_bytes(), d.total() - d.transport) << d.device;
    EXPECT_EQ(mem->in_use_bytes(), mem->peak_bytes()) << d.device;
    EXPECT_GT(d.total(), 0u);
    EXPECT_LE(d.arena_lower_bound, d.arena) << d.device;
    EXPECT_LE(d.arena, d.unshared_tensors()) << d.device;
    EXPECT_EQ(c.host ? d.staging : d.transport, 0u) << "a CPU stages nothing; a GPU's slots are host memory";
  }
}

// A GPU holds cuBLAS's fixed workspace (32 MiB, whatever the batch and the
// ops); a CPU holds none. The plan counts it in the device's total.
TEST(MemoryPlan, CountsTheGpuLibraryWorkspace) {
  Graph g = split_cnn();
  Program program = build_training_program(g);
  Partition part = partition_program(g, program);
  for (bool host : {true, false})
    for (int64_t batch : {1, 64}) {
      MemoryPlan plan = plan_memory(plan_inputs_for(g, program, part, host, 1, inputs_of(g)), batch);
      for (const DeviceMemoryPlan& d : plan.devices) {
        EXPECT_EQ(d.library, host ? 0u : uint64_t{32} << 20) << d.device;
        EXPECT_EQ(d.total(), d.params + d.grads + d.optimizer_state + d.arena + d.workspace + d.transport + d.library);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, PlanMatchesExecutor,
                         ::testing::Values(PlanCase{true, true, 1}, PlanCase{true, true, 5}, PlanCase{true, true, 64},
                                           PlanCase{false, true, 1}, PlanCase{false, true, 1000},
                                           PlanCase{true, false, 7}, PlanCase{false, false, 33},
                                           PlanCase{true, true, 16, 3}, PlanCase{true, false, 16, 2},
                                           PlanCase{false, true, 250, 4}));

// Feeds `batch` samples of deterministic images and labels.
struct Inputs {
  std::vector<float> images, labels;
  explicit Inputs(int64_t batch, int64_t offset = 0)
      : images(static_cast<size_t>(batch * 784)), labels(static_cast<size_t>(batch)) {
    for (size_t i = 0; i < images.size(); ++i)
      images[i] = static_cast<float>((i + static_cast<size_t>(offset) * 784) * 2654435761u % 1000) / 1000.0f;
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>((i + static_cast<size_t>(offset)) % 10);
  }
};

std::unique_ptr<Executor> single_device(const Graph& g, const Program& p, const KernelFactory& k, DeviceMemory* mem,
                                        int64_t batch) {
  OptimizerConfig opt;
  opt.kind = OptimizerConfig::Kind::kMomentum;
  auto ex = std::make_unique<Executor>(g, p, k, opt, 2, 7, nullptr, nullptr, nullptr, mem);
  for (int n : inputs_of(g)) ex->set_external(n);
  ex->reserve(batch);
  ex->init_parameters();
  return ex;
}

std::vector<std::vector<float>> values(const Executor& ex) {
  std::vector<std::vector<float>> out;
  for (const Parameter& p : ex.parameters()) ex.read_parameter(p, out.emplace_back());
  return out;
}

TEST(StagedExecutor, SameBitsAsInPlace) {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) g.node(i).device = "cpu:0";
  Program p = build_training_program(g);
  CpuKernelFactory kernels;
  HostMemory host("cpu:0", 0);
  StagedHostMemory staged("gpu:0", 0);
  auto a = single_device(g, p, kernels, &host, 8);
  auto b = single_device(g, p, kernels, &staged, 8);
  Inputs in(8);
  for (Executor* ex : {a.get(), b.get()}) {
    ex->bind_output(g.find("image"), in.images.data());
    ex->bind_output(g.find("label"), in.labels.data());
  }
  for (int64_t step = 0; step < 2; ++step) {
    StepInfo info{step, 0, 8, true};
    for (Executor* ex : {a.get(), b.get()}) {
      ex->forward(8, info);
      ex->backward(8, info, false);
      ex->apply_optimizer(step + 1);
    }
    EXPECT_EQ(a->scalar(g.find("loss")), b->scalar(g.find("loss")));
  }
  EXPECT_EQ(values(*a), values(*b));
  EXPECT_GT(staged.copies, 0);
}

// On the CPU the reference model's relu1 and relu2 are fused into conv1 and
// conv2, and their backward into pool1's and pool2's (core/plan/fused_relu.h):
// their outputs are the convolutions' buffers, their output gradients the
// convolutions' output gradients, and training steps and the relus' outputs
// keep the bits of the unfused ops.
TEST(FusedRelu, TheCpuFusesTheConvolutionsRelusWithTheSameBits) {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) g.node(i).device = "cpu:0";
  const Program p = build_training_program(g);
  CpuKernelFactory kernels;
  OptimizerConfig opt;
  opt.kind = OptimizerConfig::Kind::kMomentum;
  HostMemory fused_memory("cpu:0", 0), plain_memory("cpu:0", 0);
  Executor fused(g, p, kernels, opt, 2, 7, nullptr, nullptr, nullptr, &fused_memory);
  Executor plain(g, p, kernels, opt, 2, 7, nullptr, nullptr, nullptr, &plain_memory);
  plain.set_fuse_relus(false);
  Inputs in(8);
  for (Executor* ex : {&fused, &plain}) {
    for (int n : inputs_of(g)) ex->set_external(n);
    ex->reserve(8);
    ex->init_parameters();
    ex->bind_output(g.find("image"), in.images.data());
    ex->bind_output(g.find("label"), in.labels.data());
  }
  ASSERT_EQ(fused.fused_relus().size(), 2u);
  EXPECT_EQ(fused.fused_relus()[0].producer, g.find("conv1"));
  EXPECT_EQ(fused.fused_relus()[0].relu, g.find("relu1"));
  EXPECT_EQ(fused.fused_relus()[1].relu, g.find("relu2"));
  EXPECT_TRUE(plain.fused_relus().empty());
  // The pools run the relus' backward (their gradients fused, too).
  ASSERT_EQ(fused.fused_relu_gradients().size(), 2u);
  EXPECT_EQ(fused.fused_relu_gradients()[0].consumer, g.find("pool2"));
  EXPECT_EQ(fused.fused_relu_gradients()[1].consumer, g.find("pool1"));
  EXPECT_TRUE(plain.fused_relu_gradients().empty());
  // The relus' buffers (and their output gradients') are gone from the tensor arena's list.
  std::vector<bool> uses(static_cast<size_t>(p.tensor_count()), true), external(static_cast<size_t>(g.size()), false);
  for (int n : inputs_of(g)) external[static_cast<size_t>(n)] = true;
  const std::vector<int> edge_of(static_cast<size_t>(p.tensor_count()), -1);
  auto unshared = [&](const std::vector<FusedRelu>* f, const std::vector<FusedReluGradient>* fg) {
    return tensor_arena(
               TensorAllocationInputs{&g, &p, &uses, &edge_of, &external, true, f, &p.forward, &p.backward, fg}, 8)
        .unshared;
  };
  const auto relus =
      static_cast<uint64_t>(g.node(g.find("relu1")).activation_bytes(8) + g.node(g.find("relu2")).activation_bytes(8));
  EXPECT_EQ(unshared(nullptr, nullptr) - unshared(&fused.fused_relus(), nullptr), relus);
  EXPECT_EQ(unshared(&fused.fused_relus(), nullptr) - unshared(&fused.fused_relus(), &fused.fused_relu_gradients()),
            relus);
  EXPECT_LE(fused_memory.in_use_bytes(), plain_memory.in_use_bytes());
  for (int64_t step = 0; step < 2; ++step) {
    const StepInfo info{step, 0, 8, true};
    for (Executor* ex : {&fused, &plain}) ex->forward(8, info);
    // After the forward pass (the backward pass may reuse their bytes once
    // the relus' backward has read them).
    for (const char* relu : {"relu1", "relu2"}) {
      const TensorView a = fused.output(g.find(relu), 8), b = plain.output(g.find(relu), 8);
      ASSERT_EQ(a.numel(), b.numel());
      EXPECT_EQ(std::memcmp(a.data, b.data, static_cast<size_t>(a.numel()) * sizeof(float)), 0) << relu;
    }
    for (Executor* ex : {&fused, &plain}) {
      ex->backward(8, info, false);
      ex->apply_optimizer(step + 1);
    }
  }
  EXPECT_EQ(values(fused), values(plain));
  // A device the CPU cannot address (a GPU) fuses nothing.
  StagedHostMemory staged("gpu:0", 0);
  auto on_gpu = single_device(g, p, kernels, &staged, 8);
  EXPECT_TRUE(on_gpu->fused_relus().empty());
}

// One training step of the reference CNN over 64 samples, as micro-batches
// of `micro_batch` with gradient chunks of `chunk` samples (0: none): the
// loss summed over the micro-batches, and the parameters after the update.
struct OneStep {
  float loss = 0;
  std::vector<std::vector<float>> params;
};

OneStep one_step(const Graph& g, const Program& p, const KernelFactory& kernels, int64_t chunk, int64_t micro_batch) {
  Inputs all(64);
  auto ex = single_device(g, p, kernels, nullptr, micro_batch);
  ex->set_gradient_chunk(chunk);
  OneStep r;
  for (int64_t first = 0; first < 64; first += micro_batch) {
    const StepInfo info{0, first, 64, true};
    ex->bind_output(g.find("image"), all.images.data() + first * 784);
    ex->bind_output(g.find("label"), all.labels.data() + first);
    ex->forward(micro_batch, info);
    r.loss += ex->scalar(g.find("loss"));
    ex->backward(micro_batch, info, /*accumulate=*/first > 0);
  }
  ex->apply_optimizer(1);
  r.params = values(*ex);
  return r;
}

double distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t j = 0; j < a.size(); ++j) d += std::pow(static_cast<double>(a[j]) - b[j], 2);
  return std::sqrt(d);
}

// Without gradient chunks, 4 accumulated micro-batches of 16 sum each
// gradient in another order than the whole batch of 64 does, and a GEMM's
// rows may round differently at 16 rows than at 64 (OpenBLAS's and oneDNN's
// AVX2 kernels do). The micro-batched step then differs from the whole one
// by float32 rounding alone: per parameter, no more than 4x what other
// orders of the whole batch's own sums (chunks of 32 and of 8, no
// micro-batches) change, the larger of the two: one order alone may happen
// to leave a parameter's gradient almost as it was (conv1's, chunks of 32,
// on the AVX-512 path, where the dense forward's rows do not depend on
// their call). (Chunks of 16 would call every kernel as the micro-batches
// do.)
TEST(MicroBatches, AccumulatedStepDiffersFromTheFullStepByRoundingAlone) {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) g.node(i).device = "cpu:0";
  const Program p = build_training_program(g);
  CpuKernelFactory kernels;
  auto before = single_device(g, p, kernels, nullptr, 64);
  const auto initial = values(*before);
  const OneStep full = one_step(g, p, kernels, 0, 64), micro = one_step(g, p, kernels, 0, 16);
  const OneStep reordered = one_step(g, p, kernels, 32, 64), reordered_finer = one_step(g, p, kernels, 8, 64);
  const double loss_rounding =
      std::max(std::fabs(reordered.loss - full.loss), std::fabs(reordered_finer.loss - full.loss));
  EXPECT_NEAR(micro.loss, full.loss, 4 * loss_rounding + 1e-7 * std::fabs(full.loss));
  for (size_t i = 0; i < full.params.size(); ++i) {
    const std::string& name = before->parameters()[i].name;
    const double update = distance(full.params[i], initial[i]);
    ASSERT_GT(update, 0) << name << " was not updated";
    const double rounding =
        std::max(distance(full.params[i], reordered.params[i]), distance(full.params[i], reordered_finer.params[i]));
    EXPECT_LE(distance(full.params[i], micro.params[i]), 4 * rounding + 1e-7 * update) << name;
  }
}

// One step of 64 samples, run whole and as accumulated micro-batches of
// 32 and of 16: with gradient chunks of 16 samples the executor calls every
// kernel once per chunk, forward and backward, so every run computes each
// chunk by the same calls and adds the same chunk gradients in the same
// order: all three end with the same bits, whatever rows and blockings the
// libraries choose on this CPU. Without chunks the whole batch sums its
// samples in another order than the micro-batches do (which shows the
// comparison can fail).
TEST(MicroBatches, OfWholeGradientChunksGiveTheBitsOfTheWholeBatch) {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) g.node(i).device = "cpu:0";
  const Program p = build_training_program(g);
  CpuKernelFactory kernels;
  const OneStep whole = one_step(g, p, kernels, 16, 64);
  EXPECT_TRUE(whole.params == one_step(g, p, kernels, 16, 32).params);
  EXPECT_TRUE(whole.params == one_step(g, p, kernels, 16, 16).params);
  EXPECT_FALSE(one_step(g, p, kernels, 0, 64).params == one_step(g, p, kernels, 0, 16).params);
}

// The memory plan counts the op schema's workspace; the CPU conv kernel
// must need exactly that (no more: the executor refuses; no less: the plan
// would overstate).
TEST(Workspace, CpuConvKernelNeedsWhatTheSchemaPlans) {
  CpuKernelFactory kernels;
  auto conv = kernels.make_kernel("conv2d");
  for (int64_t channels : {1, 3, 32})
    for (int64_t filters : {4, 64})
      for (int64_t kernel : {1, 3, 5})
        for (int64_t side : {4, 14, 28}) {
          Graph g;
          g.add(make("x", "input", {}, with("shape", std::vector<int64_t>{channels, side, side})));
          Attrs a = with("filters", filters);
          a.set("kernel", kernel);
          a.set("padding", kernel / 2);
          g.add(make("c", "conv2d", {0}, a));
          g.infer();
          for (int64_t batch : {1, 3, 8, 64})
            EXPECT_EQ(conv->workspace_bytes(g.node(1), batch), g.node(1).workspace_bytes(batch))
                << channels << "x" << side << "x" << side << " k" << kernel << " f" << filters << " batch " << batch;
        }
}

TEST(DeviceMemoryBudget, RefusesOverLimitAndNamesWhat) {
  HostMemory mem("cpu:1", 1 << 20);
  DeviceBuffer a(mem, 200 * 1024, "fc1 output");  // 800 KiB
  EXPECT_EQ(mem.in_use_bytes(), 800u * 1024);
  try {
    DeviceBuffer b(mem, 100 * 1024, "fc1 gradient");
    FAIL() << "expected the limit to be enforced";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cpu:1: fc1 gradient needs 400.0 KiB more, but 800.0 KiB of its memory_limit of 1.00 MiB are in use");
  }
  EXPECT_EQ(mem.in_use_bytes(), 800u * 1024);
  a.reset();
  EXPECT_EQ(mem.in_use_bytes(), 0u);
  EXPECT_EQ(mem.peak_bytes(), 800u * 1024);
  mem.charge(1 << 20, "edge slots");
  EXPECT_EQ(mem.peak_bytes(), 1u << 20);
  EXPECT_THROW(mem.charge(64, "more slots"), Error);
}

PlanInputs budgeted(const Graph& g, const Program& p, const Partition& part, uint64_t limit0, uint64_t limit1) {
  PlanInputs in = plan_inputs_for(g, p, part, true, 1, inputs_of(g));
  in.devices[0].limit = limit0;
  in.devices[1].limit = limit1;
  return in;
}

TEST(SplitBatch, LargestEvenMicroBatchThatFits) {
  Graph g = split_cnn();
  Program p = build_training_program(g);
  Partition part = partition_program(g, p);
  PlanInputs unlimited = budgeted(g, p, part, 0, 0);
  const uint64_t at16 = plan_memory(unlimited, 16).find("cpu:0")->total();
  BatchSplit s = split_batch(budgeted(g, p, part, at16, 0), 64);
  EXPECT_EQ(s.micro, 16);
  EXPECT_EQ(s.count, 4);
  EXPECT_TRUE(s.plan.fits());
  EXPECT_NE(s.decision.find("cpu:0: batch 64 needs "), std::string::npos) << s.decision;
  EXPECT_NE(s.decision.find("running 4 micro-batches of 16"), std::string::npos) << s.decision;
  // 20 fits but 64 = 4 x 16 keeps the micro-batches even.
  const uint64_t at20 = plan_memory(unlimited, 20).find("cpu:0")->total();
  s = split_batch(budgeted(g, p, part, at20, 0), 64);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.micro, 16);
  // Unlimited: one batch, no decision.
  s = split_batch(unlimited, 64);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.micro, 64);
  EXPECT_TRUE(s.decision.empty());
}

TEST(SplitBatch, UnevenSplitsAreAsEvenAsPossible) {
  // 64 samples at most 7 a micro-batch: ten, four of 7 and six of 6.
  EXPECT_EQ(micro_batch_sizes(64, 7), (std::vector<int64_t>{7, 7, 7, 7, 6, 6, 6, 6, 6, 6}));
  EXPECT_EQ(describe_micro_batches(64, 7), "4 of 7 and 6 of 6");
  EXPECT_EQ(split_phrase(64, 7), "10 micro-batches: 4 of 7 and 6 of 6");
  EXPECT_EQ(split_phrase(64, 16), "4 micro-batches of 16");
  EXPECT_EQ(split_phrase(64, 20), "4 micro-batches of 16");
  EXPECT_EQ(micro_batch_sizes(5, 8), (std::vector<int64_t>{5}));
  EXPECT_TRUE(micro_batch_sizes(0, 8).empty());
  for (int64_t batch = 1; batch <= 200; ++batch)
    for (int64_t micro = 1; micro <= batch; ++micro) {
      std::vector<int64_t> sizes = micro_batch_sizes(batch, micro);
      int64_t sum = 0;
      for (int64_t n : sizes) {
        sum += n;
        EXPECT_LE(n, micro);
        EXPECT_GE(n, sizes.back());
        EXPECT_LE(sizes.front() - n, 1);
      }
      EXPECT_EQ(sum, batch);
      EXPECT_EQ(static_cast<int64_t>(sizes.size()), (batch + micro - 1) / micro);
    }
}

TEST(SplitBatch, ImpossibleBudgetNamesDeviceOpBytesAndRemedy) {
  Graph g = split_cnn();
  Program p = build_training_program(g);
  Partition part = partition_program(g, p);
  try {
    split_batch(budgeted(g, p, part, 0, 16 << 20), 64);
    FAIL() << "fc1's parameters alone exceed 16 MiB";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    std::string m = e.what();
    EXPECT_EQ(m.rfind("cpu:1 needs ", 0), 0u) << m;
    EXPECT_NE(m.find("most of it for fc1 (parameters 12.25 MiB, gradients 12.25 MiB, optimizer state 12.25 MiB"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("but its memory_limit is 16.00 MiB: move fc1 to another device or raise cpu:1's memory_limit"),
              std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace devmap
