// GradientOutlet on a device whose memory the host cannot address (a GPU):
// the gradient segment is pinned for the outlet's life (one DMA per
// gradient copy), and a gradient goes to its entry's offset. The device is
// a fake: host memory that says it is not host-addressable and records
// register_host / unregister_host.
#include "worker/gradient_outlet.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/exec/host_memory.h"
#include "transport/shm_segment.h"

namespace devmap {
namespace {

class DeviceLikeMemory : public HostMemory {
 public:
  using HostMemory::HostMemory;
  bool host_accessible() const override { return false; }
  void register_host(void* p, size_t bytes) override {
    registered = p;
    registered_bytes = bytes;
  }
  void unregister_host(void* p) override { unregistered = p; }
  void* registered = nullptr;
  size_t registered_bytes = 0;
  void* unregistered = nullptr;
};

TEST(GradientOutlet, OnADeviceTheSegmentIsPinnedForTheOutletsLife) {
  const std::string name = "devmap_test_grad_" + std::to_string(::getpid());
  ShmSegment segment = ShmSegment::create(name, 4096);
  DeviceLikeMemory memory("gpu:0", 0);
  std::vector<Parameter> params(1);
  params[0].name = "fc.weight";
  params[0].node = 0;
  params[0].spec.name = "weight";
  params[0].spec.shape = Shape{2, 3};
  params[0].grad = DeviceBuffer(memory, 6, "gradient");
  ParamsIo io;
  io.op = ParamsIo::Op::kMapGradients;
  io.path = name;
  io.entries.push_back(ParamsIo::Entry{"fc.weight.grad", 64, 6 * sizeof(float)});
  {
    GradientOutlet outlet(io, params, memory);
    EXPECT_NE(memory.registered, nullptr);
    EXPECT_EQ(memory.registered_bytes, segment.size());
    EXPECT_EQ(memory.unregistered, nullptr);
    for (int i = 0; i < 6; ++i) params[0].grad.data()[i] = static_cast<float>(i + 1);
    std::vector<std::string> sent;
    outlet.begin(0, [&](const std::string& frame) { sent.push_back(frame); });
    outlet.end();
    EXPECT_EQ(sent.size(), 1u);
    float copied[6];
    std::memcpy(copied, static_cast<const char*>(segment.data()) + 64, sizeof copied);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(copied[i], static_cast<float>(i + 1));
  }
  EXPECT_EQ(memory.unregistered, memory.registered) << "unpinned when the outlet goes";
}

}  // namespace
}  // namespace devmap
