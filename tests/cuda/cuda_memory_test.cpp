// CudaMemory: the GPU's DeviceMemory. The limit arithmetic runs everywhere;
// the rest needs a GPU.
#include "kernels/cuda/cuda_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/exec/host_memory.h"
#include "core/exec/thread_pool.h"
#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

using cuda::CudaMemory;

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

TEST(CudaMemoryLimit, DefaultIsFreeMemoryLessTheReserve) {
  // The reserve is 1 GiB, or 5% of the total when that is more.
  EXPECT_EQ(CudaMemory::default_limit(8 * kGiB, 8 * kGiB), 7 * kGiB);
  EXPECT_EQ(CudaMemory::default_limit(100 * kGiB, 140 * kGiB), 93 * kGiB);
  EXPECT_EQ(CudaMemory::default_limit(kGiB / 2, 4 * kGiB), 0u);  // less than the reserve is free
}

// The message of the devmap::Error `fn` throws, or "(no error)".
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// An explicit memory_limit leaves the reserve free too: cuDNN and cuBLAS
// load kernels outside the pool on first use.
TEST(CudaMemoryLimit, AnExplicitLimitLeavesTheReserveFree) {
  EXPECT_EQ(CudaMemory::pool_limit("gpu:0", 4 * kGiB, 8 * kGiB, 8 * kGiB), 4 * kGiB);
  EXPECT_EQ(CudaMemory::pool_limit("gpu:0", 7 * kGiB, 8 * kGiB, 8 * kGiB), 7 * kGiB);
  EXPECT_EQ(CudaMemory::pool_limit("gpu:0", 0, 8 * kGiB, 8 * kGiB), 7 * kGiB);
  const std::string message = error_of([] { CudaMemory::pool_limit("gpu:0", 8 * kGiB, 8 * kGiB, 8 * kGiB); });
  EXPECT_EQ(message,
            "gpu:0: memory_limit 8.00 GiB leaves less than the 1.00 GiB the GPU worker keeps free for CUDA, cuDNN "
            "and cuBLAS (8.00 GiB of 8.00 GiB free); set devices.gpu:0.memory_limit to at most 7.00 GiB, or 0 for "
            "that figure");
  // 5% of 140 GiB is the reserve on a large device.
  EXPECT_EQ(CudaMemory::pool_limit("gpu:1", 133 * kGiB, 140 * kGiB, 140 * kGiB), 133 * kGiB);
  EXPECT_NE(error_of([] { CudaMemory::pool_limit("gpu:1", 134 * kGiB, 140 * kGiB, 140 * kGiB); }), "(no error)");
}

std::unique_ptr<CudaMemory> small_memory(uint64_t limit) {
  return std::make_unique<CudaMemory>(gpu_env().device, "gpu:0", limit);
}

TEST(CudaMemory, EnforcesTheLimitAndRecordsThePeak) {
  DEVMAP_REQUIRE_GPU();
  auto m = small_memory(kMiB);
  EXPECT_FALSE(m->host_accessible());
  EXPECT_EQ(m->limit_bytes(), kMiB);
  void* a = m->allocate(600 * 1024, "a");
  void* b = m->allocate(300 * 1024, "b");
  EXPECT_EQ(m->in_use_bytes(), 900u * 1024);
  try {
    m->allocate(200 * 1024, "conv1 output");
    FAIL() << "allocating past the limit must throw";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("gpu:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("conv1 output"), std::string::npos) << msg;
  }
  m->release(a, 600 * 1024);
  void* c = m->allocate(100 * 1024, "c");
  EXPECT_EQ(m->peak_bytes(), 900u * 1024);
  EXPECT_EQ(m->in_use_bytes(), 400u * 1024);
  m->release(b, 300 * 1024);
  m->release(c, 100 * 1024);
  EXPECT_EQ(m->in_use_bytes(), 0u);
}

// The first CudaMemory of a device gives cuBLAS its one workspace from the
// pool: the kGpuLibraryWorkspaceBytes the memory plan counts.
TEST(CudaMemory, FirstOfADeviceHoldsCublasWorkspace) {
  DEVMAP_REQUIRE_GPU();
  auto device = std::make_shared<cuda::CudaDevice>(0);
  {
    CudaMemory m(device, "gpu:0", kGpuLibraryWorkspaceBytes + kMiB);
    EXPECT_EQ(m.in_use_bytes(), kGpuLibraryWorkspaceBytes);
    EXPECT_EQ(m.peak_bytes(), kGpuLibraryWorkspaceBytes);
    EXPECT_GT(device->cublas_workspace_bytes(), 0u);
    EXPECT_LE(device->cublas_workspace_bytes(), kGpuLibraryWorkspaceBytes);
    CudaMemory second(device, "gpu:0", kMiB);  // shares it
    EXPECT_EQ(second.in_use_bytes(), 0u);
  }
  EXPECT_EQ(device->cublas_workspace_bytes(), 0u) << "handed back with the pool";
  EXPECT_THROW(CudaMemory(std::make_shared<cuda::CudaDevice>(0), "gpu:0", kMiB), Error) << "no room for it";
}

TEST(CudaMemory, AllocationsAreZeroedAlignedAndInsideThePool) {
  DEVMAP_REQUIRE_GPU();
  auto m = small_memory(4 * kMiB);
  std::vector<float> junk(1000, 3.0f), back(1000, 1.0f);
  auto* p = static_cast<float*>(m->allocate(4000, "x"));
  m->copy_from_host(p, junk.data(), 4000);
  m->release(p, 4000);
  auto* q = static_cast<float*>(m->allocate(4000, "y"));  // best fit: the same block again
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 64, 0u);
  const auto* base = static_cast<const char*>(m->pool_base());
  EXPECT_GE(reinterpret_cast<const char*>(q), base);
  EXPECT_LE(reinterpret_cast<const char*>(q) + 4000, base + m->pool_bytes());
  m->copy_to_host(back.data(), q, 4000);
  for (float v : back) ASSERT_EQ(v, 0.0f);
  m->release(q, 4000);
}

TEST(CudaMemory, CopiesRoundTripAndFillWrites) {
  DEVMAP_REQUIRE_GPU();
  auto m = small_memory(4 * kMiB);
  const int64_t n = 100003;
  std::vector<float> host(static_cast<size_t>(n)), back(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f - 7.0f;
  DeviceBuffer a(*m, n, "a"), b(*m, n, "b");
  m->copy_from_host(a.data(), host.data(), host.size() * sizeof(float));
  m->copy_on_device(b.data(), a.data(), host.size() * sizeof(float));
  m->copy_to_host(back.data(), b.data(), back.size() * sizeof(float));
  EXPECT_EQ(back, host);
  m->fill(a.data() + 5, -2.5f, 10);
  m->copy_to_host(back.data(), a.data(), back.size() * sizeof(float));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(back[static_cast<size_t>(i)], i >= 5 && i < 15 ? -2.5f : host[static_cast<size_t>(i)]) << i;
}

// out = parts[0] + parts[1] + ... left to right, the bits of HostMemory::sum,
// with 20 parts (two kernel passes) whose sum depends on the order.
TEST(CudaMemory, SumAddsInTheHostsOrder) {
  DEVMAP_REQUIRE_GPU();
  auto m = small_memory(16 * kMiB);
  const int64_t n = 4099;
  const int parts = 20;
  std::vector<std::vector<float>> host(parts, std::vector<float>(static_cast<size_t>(n)));
  for (int k = 0; k < parts; ++k)
    for (int64_t i = 0; i < n; ++i)
      host[static_cast<size_t>(k)][static_cast<size_t>(i)] =
          (k % 3 == 0 ? 1e8f : 1.0f) * (k % 2 ? -1.0f : 1.0f) + static_cast<float>(i % 17) * 1e-3f;
  std::vector<DeviceBuffer> dev;
  std::vector<const float*> dev_ptrs, host_ptrs;
  for (int k = 0; k < parts; ++k) {
    dev.emplace_back(*m, n, "part");
    m->copy_from_host(dev.back().data(), host[static_cast<size_t>(k)].data(), static_cast<size_t>(n) * 4);
    dev_ptrs.push_back(dev.back().data());
    host_ptrs.push_back(host[static_cast<size_t>(k)].data());
  }
  DeviceBuffer out(*m, n, "out");
  ThreadPool pool(1);
  m->sum(out.data(), dev_ptrs, n, pool);
  std::vector<float> gpu(static_cast<size_t>(n)), cpu(static_cast<size_t>(n));
  m->copy_to_host(gpu.data(), out.data(), gpu.size() * 4);
  HostMemory host_memory("cpu:0", 0);
  host_memory.sum(cpu.data(), host_ptrs, n, pool);
  EXPECT_EQ(0, std::memcmp(gpu.data(), cpu.data(), gpu.size() * 4));
  // Summing into the first part (aliasing) gives the same.
  m->sum(dev[0].data(), dev_ptrs, n, pool);
  m->copy_to_host(gpu.data(), dev[0].data(), gpu.size() * 4);
  EXPECT_EQ(0, std::memcmp(gpu.data(), cpu.data(), gpu.size() * 4));
}

TEST(CudaMemory, PinsHostMemoryUnlessDisabled) {
  DEVMAP_REQUIRE_GPU();
  std::vector<float> slot(1 << 18, 1.0f);
  {
    ::unsetenv("DEVMAP_NO_PIN");
    auto m = small_memory(4 * kMiB);
    EXPECT_TRUE(m->pinning_enabled());
    m->register_host(slot.data(), slot.size() * 4);
    m->register_host(slot.data(), slot.size() * 4);  // twice: no-op
    EXPECT_EQ(m->pinned_bytes(), slot.size() * 4);
    DeviceBuffer d(*m, static_cast<int64_t>(slot.size()), "d");
    m->copy_from_host(d.data(), slot.data(), slot.size() * 4);
    std::vector<float> back(slot.size());
    m->copy_to_host(back.data(), d.data(), back.size() * 4);
    EXPECT_EQ(back, slot);
    m->unregister_host(slot.data());
    EXPECT_EQ(m->pinned_bytes(), 0u);
  }
  ::setenv("DEVMAP_NO_PIN", "1", 1);
  auto m = small_memory(4 * kMiB);
  EXPECT_FALSE(m->pinning_enabled());
  m->register_host(slot.data(), slot.size() * 4);
  EXPECT_EQ(m->pinned_bytes(), 0u);
  ::unsetenv("DEVMAP_NO_PIN");
}

TEST(CudaMemory, LimitAboveTheFreeMemoryIsRefused) {
  DEVMAP_REQUIRE_GPU();
  try {
    small_memory(gpu_probe().total_bytes * 2);
    FAIL() << "a limit above the device's memory must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory_limit"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace devmap::test
