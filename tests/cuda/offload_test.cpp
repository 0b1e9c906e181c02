// The GPU's offload pieces (core/plan/offload_layout.h):
// - the host optimizers of offloaded state (kernels/cuda/host_optimizers.h)
//   give the CPU optimizers' bits (no GPU needed) and the GPU optimizers'
//   bits (with a GPU), whatever the thread pool;
// - CudaMemory's offload memory is pinned host memory the CPU addresses;
// - CudaCopyQueue orders a fetch before the kernels issued after order(),
//   and a write-back after the kernels issued before it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/exec/copy_queue.h"
#include "core/exec/thread_pool.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "kernels/cuda/host_optimizers.h"
#include "kernels/cuda/pinned_host_memory.h"
#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

std::vector<OptimizerConfig> optimizer_configs() {
  std::vector<OptimizerConfig> configs;
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kSgd;
  c.learning_rate = 0.05;
  c.weight_decay = 1e-3;
  configs.push_back(c);
  c.kind = OptimizerConfig::Kind::kMomentum;
  c.learning_rate = 0.01;
  c.momentum = 0.9;
  c.weight_decay = 5e-4;
  configs.push_back(c);
  c.kind = OptimizerConfig::Kind::kAdam;
  c.learning_rate = 1e-3;
  c.weight_decay = 1e-2;
  configs.push_back(c);
  return configs;
}

const char* kind_name(const OptimizerConfig& c) {
  switch (c.kind) {
    case OptimizerConfig::Kind::kSgd: return "sgd";
    case OptimizerConfig::Kind::kMomentum: return "momentum";
    case OptimizerConfig::Kind::kAdam: return "adam";
  }
  return "?";
}

// Five updates of one parameter of `n` floats by `a` (on `pool_a`) and by
// the host optimizer (on a pool of `threads`), from the same values: the
// same bits.
void expect_host_optimizer_bits(OptimizerKernel& a, ThreadPool& pool_a, const OptimizerConfig& config, int threads,
                                int64_t n) {
  auto host = cuda::make_host_optimizer(config);
  ASSERT_EQ(host->state_count(), a.state_count());
  Buffer pa(n), ph(n), grad(n);
  fill_uniform(span_of(pa), 20, -1.0f, 1.0f);
  std::memcpy(ph.data(), pa.data(), static_cast<size_t>(n) * sizeof(float));
  std::vector<Buffer> sa, sh;
  for (int s = 0; s < a.state_count(); ++s) {
    sa.emplace_back(n);
    sh.emplace_back(n);
  }
  ThreadPool pool(threads);
  for (int64_t step = 1; step <= 5; ++step) {
    fill_uniform(span_of(grad), 30 + static_cast<uint64_t>(step), -1.0f, 1.0f);
    std::vector<TensorView> va, vh;
    for (int s = 0; s < a.state_count(); ++s) {
      va.push_back(sa[static_cast<size_t>(s)].view(Shape{n}));
      vh.push_back(sh[static_cast<size_t>(s)].view(Shape{n}));
    }
    a.update(pa.view(Shape{n}), grad.view(Shape{n}), va, step, pool_a);
    host->update(ph.view(Shape{n}), grad.view(Shape{n}), vh, step, pool);
  }
  const std::string what = std::string(kind_name(config)) + " on " + std::to_string(threads) + " threads";
  EXPECT_EQ(std::memcmp(pa.data(), ph.data(), static_cast<size_t>(n) * sizeof(float)), 0) << what << ": parameter";
  for (int s = 0; s < a.state_count(); ++s)
    EXPECT_EQ(std::memcmp(sa[static_cast<size_t>(s)].data(), sh[static_cast<size_t>(s)].data(),
                          static_cast<size_t>(n) * sizeof(float)),
              0)
        << what << ": state " << s;
}

TEST(CudaHostOptimizers, GiveTheCpuOptimizersBits) {
  const int64_t n = (int64_t{1} << 18) + 3;  // split over the pool, with a ragged end
  for (const OptimizerConfig& c : optimizer_configs()) {
    auto cpu = CpuKernelFactory().make_optimizer(c);
    ThreadPool pool(2);
    for (int threads : {1, 3}) expect_host_optimizer_bits(*cpu, pool, c, threads, n);
  }
}

TEST(CudaHostOptimizers, AreTheGpuFactorysHostOptimizers) {
  const cuda::CudaKernelFactory factory(std::make_shared<cuda::CudaDevice>(0));  // touches no GPU
  for (const OptimizerConfig& c : optimizer_configs())
    EXPECT_EQ(factory.make_host_optimizer(c)->implementation(), std::string(kind_name(c)) + "/host");
}

// The GPU's optimizer kernel on device copies against the host optimizer.
TEST(CudaHostOptimizers, GiveTheGpuOptimizersBits) {
  DEVMAP_REQUIRE_GPU();
  const int64_t n = 100003;
  for (const OptimizerConfig& c : optimizer_configs()) {
    auto gpu = gpu_env().factory.make_optimizer(c);
    auto host = cuda::make_host_optimizer(c);
    Buffer p(n), grad(n);
    fill_uniform(span_of(p), 20, -1.0f, 1.0f);
    DeviceTensor gp(p);
    std::vector<Buffer> hs;
    std::vector<DeviceTensor> gs;
    for (int s = 0; s < gpu->state_count(); ++s) {
      hs.emplace_back(n);
      gs.emplace_back(n);
    }
    ThreadPool pool(2);
    for (int64_t step = 1; step <= 5; ++step) {
      fill_uniform(span_of(grad), 30 + static_cast<uint64_t>(step), -1.0f, 1.0f);
      DeviceTensor gg(grad);
      std::vector<TensorView> vh, vg;
      for (int s = 0; s < gpu->state_count(); ++s) {
        vh.push_back(hs[static_cast<size_t>(s)].view(Shape{n}));
        vg.push_back(TensorView{gs[static_cast<size_t>(s)].data(), Shape{n}});
      }
      gpu->update(TensorView{gp.data(), Shape{n}}, TensorView{gg.data(), Shape{n}}, vg, step, pool);
      host->update(p.view(Shape{n}), grad.view(Shape{n}), vh, step, pool);
    }
    expect_equal(gp.download(), p, std::string(kind_name(c)) + " parameter");
    for (int s = 0; s < gpu->state_count(); ++s)
      expect_equal(gs[static_cast<size_t>(s)].download(), hs[static_cast<size_t>(s)],
                   std::string(kind_name(c)) + " state " + std::to_string(s));
  }
}

TEST(CudaOffloadMemory, IsPinnedHostMemoryTheCpuAddresses) {
  DEVMAP_REQUIRE_GPU();
  std::unique_ptr<DeviceMemory> host = gpu_env().memory.make_offload_memory("gpu:0 host memory (offloaded)");
  ASSERT_NE(dynamic_cast<cuda::PinnedHostMemory*>(host.get()), nullptr);
  EXPECT_TRUE(host->host_accessible());
  EXPECT_EQ(host->limit_bytes(), 0u);
  DeviceBuffer b(*host, 1000, "offloaded value");
  for (int64_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.data()[i], 0.0f) << "zeroed";
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, b.data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "page-locked by CUDA";
  EXPECT_EQ(host->peak_bytes(), 4032u) << "1000 floats, cache-line rounded";
}

// A fetch, then a device-side read issued after order(); a device-side
// write, then a write-back: each sees the other's data.
TEST(CudaCopyQueue, OrdersFetchesAndWriteBacksWithTheKernels) {
  DEVMAP_REQUIRE_GPU();
  cuda::CudaMemory& memory = gpu_env().memory;
  std::unique_ptr<DeviceMemory> host = memory.make_offload_memory("gpu:0 host memory (offloaded)");
  const int64_t n = int64_t{1} << 22;  // 16 MiB: a copy long enough to race with
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  DeviceBuffer values(*host, n, "values"), grads(*host, n, "grads");
  for (int64_t i = 0; i < n; ++i) values.data()[i] = static_cast<float>(i % 1000);
  DeviceBuffer staged(memory, n, "staging");
  std::unique_ptr<CopyQueue> queue = memory.make_copy_queue();
  for (int round = 0; round < 3; ++round) {
    const uint64_t fetched = queue->submit(CopyQueue::Batch{true, {{staged.data(), values.data(), bytes}}, false, {}});
    queue->order(fetched);
    std::vector<float> seen(static_cast<size_t>(n));
    memory.copy_to_host(seen.data(), staged.data(), bytes);  // on the compute stream, after the fetch
    ASSERT_EQ(std::memcmp(seen.data(), values.data(), bytes), 0) << "round " << round << ": the fetch";
    memory.fill(staged.data(), static_cast<float>(round + 7), n);  // a kernel on the compute stream
    const uint64_t back = queue->submit(CopyQueue::Batch{false, {{grads.data(), staged.data(), bytes}}, false, {}});
    EXPECT_GT(back, fetched);
    queue->wait(back);
    for (int64_t i : {int64_t{0}, n / 2, n - 1})
      ASSERT_EQ(grads.data()[i], static_cast<float>(round + 7)) << "round " << round << ": the write-back, at " << i;
  }
  queue->drain();
  std::vector<TraceEvent> events;
  queue->take_events(events);
  EXPECT_TRUE(events.empty()) << "a GPU's copies are not traced";
}

}  // namespace
}  // namespace devmap::test
