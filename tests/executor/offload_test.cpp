// Offloaded parameters (Executor's `offload`, core/plan/offload_layout.h):
// training with the trained parameters, gradients and optimizer state in
// host memory gives the bits of training with them on the device, whole or
// as micro-batches in gradient chunks, with recomputed ops; the device's
// allocator peaks at the memory plan's figure, which charges the staging
// pool and not the offloaded state; every op's parameters are fetched
// before it computes; and the executor takes its offload memory and copy
// queue from the device's memory, ordering each fetch before its op and
// waiting for the write-backs before a pass returns.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "core/exec/executor.h"
#include "core/exec/host_memory.h"
#include "core/exec/thread_copy_queue.h"
#include "core/plan/memory_plan.h"
#include "core/plan/offload_layout.h"
#include "core/plan/partition.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;  // trained and state (running statistics)
  std::vector<std::vector<float>> grads;
  uint64_t peak = 0;
  std::vector<TraceEvent> trace;  // the last step's
};

// Three steps of `micro` micro-batches of 8 samples each, chunks of 4, on
// `device` (null: a HostMemory of its own).
Trained train(const Graph& g, bool offload, int micro, OptimizerConfig::Kind kind, HostMemory* device = nullptr) {
  const Program p = build_training_program(g);
  CpuKernelFactory kernels;
  OptimizerConfig opt;
  opt.kind = kind;
  HostMemory own("cpu:0", 0);
  HostMemory& memory = device ? *device : own;
  Executor ex(g, p, kernels, opt, 2, 7, nullptr, nullptr, nullptr, &memory, offload);
  ex.set_gradient_chunk(4);
  const int64_t batch = 8 * micro;
  std::vector<float> images(static_cast<size_t>(batch * 64)), labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(i * 2654435761u % 1000) / 1000.0f;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(i % 10);
  for (const char* n : {"image", "label"}) ex.set_external(g.find(n));
  ex.reserve(8);
  ex.init_parameters();
  Trained t;
  TraceBuffer trace;
  for (int64_t step = 0; step < 3; ++step) {
    if (step == 2) ex.set_trace(&trace);
    for (int m = 0; m < micro; ++m) {
      const int64_t first = 8 * m;
      ex.bind_output(g.find("image"), images.data() + first * 64);
      ex.bind_output(g.find("label"), labels.data() + first);
      const StepInfo info{step, first, batch, true, 0, m > 0};
      ex.forward(8, info);
      ex.backward(8, info, m > 0);
    }
    t.losses.push_back(ex.scalar(g.find("loss")));
    ex.apply_optimizer(step + 1);
  }
  ex.set_trace(nullptr);
  for (const Parameter& q : ex.parameters()) {
    ex.read_parameter(q, t.params.emplace_back(), &t.grads.emplace_back());
  }
  t.peak = memory.peak_bytes();
  t.trace = trace.events();
  return t;
}

DeviceMemoryPlan planned(const Graph& g, bool offload, OptimizerConfig::Kind kind) {
  return training_memory_plan(g, 8, 0, optimizer_state_count(kind), offload).devices.at(0);
}

TEST(Offload, TrainsWithTheBitsOfParametersOnTheDevice) {
  const Graph g = residual_blocks();
  for (OptimizerConfig::Kind kind : {OptimizerConfig::Kind::kMomentum, OptimizerConfig::Kind::kAdam}) {
    for (int micro : {1, 2}) {
      const Trained a = train(g, false, micro, kind), b = train(g, true, micro, kind);
      EXPECT_EQ(a.losses, b.losses) << micro << " micro-batches";
      EXPECT_EQ(a.params, b.params) << "weights and batch_norm's running statistics, " << micro << " micro-batches";
      EXPECT_EQ(a.grads, b.grads) << micro << " micro-batches";
    }
  }
}

TEST(Offload, WithRecomputedOpsTheBitsStay) {
  Graph recomputing = residual_blocks();
  for (const char* n : {"bn1", "relu1", "bn2", "add", "relu2", "drop", "flat"})
    recomputing.node(recomputing.find(n)).recomputed = true;
  const Trained a = train(residual_blocks(), false, 2, OptimizerConfig::Kind::kMomentum);
  const Trained b = train(recomputing, true, 2, OptimizerConfig::Kind::kMomentum);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.params, b.params);
}

TEST(Offload, TheDeviceHoldsTheStagingPoolAsPlanned) {
  const Graph g = residual_blocks();
  const auto kind = OptimizerConfig::Kind::kAdam;
  const DeviceMemoryPlan on_device = planned(g, false, kind), offloaded = planned(g, true, kind);
  EXPECT_EQ(train(g, false, 1, kind).peak, on_device.total());
  EXPECT_EQ(train(g, true, 1, kind).peak, offloaded.total()) << "plan == allocation";
  // The state moved to the host: values, gradients and Adam's two moments.
  const OffloadLayout layout = offload_layout(g, std::vector<bool>(static_cast<size_t>(g.size()), true), true, 2);
  uint64_t trained = 0, largest = 0, second = 0;
  for (int i = 0; i < g.size(); ++i)
    for (const ParamSpec& s : g.node(i).params)
      if (s.trained) trained += round_up_to_cache_line(static_cast<uint64_t>(s.shape.numel()) * 4);
  for (uint64_t share : layout.share_bytes) {
    if (share > largest) {
      second = largest;
      largest = share;
    } else if (share > second) {
      second = share;
    }
  }
  EXPECT_EQ(offloaded.offloaded, 4 * trained);
  EXPECT_EQ(offloaded.offload_staging, largest + second);
  EXPECT_EQ(on_device.params + on_device.grads + on_device.optimizer_state - offloaded.params - offloaded.grads -
                offloaded.optimizer_state,
            4 * trained);
  EXPECT_EQ(offloaded.total(), on_device.total() - 4 * trained + largest + second);
}

TEST(Offload, EachOpsParametersArriveBeforeItComputes) {
  const Graph g = residual_blocks();
  const Trained t = train(g, true, 1, OptimizerConfig::Kind::kMomentum);
  std::map<std::pair<TraceKind, int>, TraceEvent> computed;
  for (const TraceEvent& e : t.trace)
    if (e.kind == TraceKind::kForward || e.kind == TraceKind::kBackward) computed[{e.kind, e.id}] = e;
  int fetches = 0, write_backs = 0;
  for (const TraceEvent& e : t.trace) {
    if (e.kind != TraceKind::kFetch && e.kind != TraceKind::kWriteBack) continue;
    EXPECT_LE(e.start_ns, e.end_ns);
    if (e.kind == TraceKind::kWriteBack) {
      ++write_backs;
      const auto backward = computed.find({TraceKind::kBackward, e.id});
      ASSERT_NE(backward, computed.end()) << g.node(e.id).name;
      EXPECT_GE(e.start_ns, backward->second.end_ns) << g.node(e.id).name;
      continue;
    }
    ++fetches;
  }
  // Every op with trained parameters is fetched for its forward and its
  // backward, and writes its gradients back once.
  int staged = 0;
  for (int i = 0; i < g.size(); ++i)
    for (const ParamSpec& s : g.node(i).params)
      if (s.trained) {
        ++staged;
        break;
      }
  EXPECT_EQ(fetches, 2 * staged);
  EXPECT_EQ(write_backs, staged);
  // A forward's fetch ends before the forward starts.
  for (const TraceEvent& e : t.trace) {
    if (e.kind != TraceKind::kFetch) continue;
    const TraceEvent& f = computed[{TraceKind::kForward, e.id}];
    const TraceEvent& b = computed[{TraceKind::kBackward, e.id}];
    EXPECT_TRUE(e.end_ns <= f.start_ns || (e.start_ns >= f.end_ns && e.end_ns <= b.start_ns)) << g.node(e.id).name;
  }
}

// A copy queue that records how the executor uses it (the contract a GPU's
// copy stream relies on) and copies through a ThreadCopyQueue.
class RecordingQueue final : public CopyQueue {
 public:
  struct Call {
    char what;  // 'f' fetch, 'b' write-back (submits), 'o' order, 'w' wait
    uint64_t ticket;
  };
  RecordingQueue(DeviceMemory& memory, std::vector<Call>& calls) : inner_(memory), calls_(calls) {}
  uint64_t submit(Batch batch) override {
    const char what = batch.to_device ? 'f' : 'b';
    const uint64_t ticket = inner_.submit(std::move(batch));
    calls_.push_back({what, ticket});
    return ticket;
  }
  void order(uint64_t ticket) override {
    calls_.push_back({'o', ticket});
    inner_.order(ticket);
  }
  void wait(uint64_t ticket) override {
    calls_.push_back({'w', ticket});
    inner_.wait(ticket);
  }
  uint64_t submitted() const override { return inner_.submitted(); }
  void take_events(std::vector<TraceEvent>& out) override { inner_.take_events(out); }

 private:
  ThreadCopyQueue inner_;
  std::vector<Call>& calls_;
};

class RecordingMemory final : public HostMemory {
 public:
  RecordingMemory() : HostMemory("cpu:0", 0) {}
  std::unique_ptr<DeviceMemory> make_offload_memory(std::string name) override {
    ++offload_memories;
    return HostMemory::make_offload_memory(std::move(name));
  }
  std::unique_ptr<CopyQueue> make_copy_queue() override { return std::make_unique<RecordingQueue>(*this, calls); }
  int offload_memories = 0;
  std::vector<RecordingQueue::Call> calls;
};

TEST(Offload, FetchesAreOrderedBeforeTheirOpAndWriteBacksWaitedFor) {
  const Graph g = residual_blocks();
  RecordingMemory memory;
  const Trained recorded = train(g, true, 2, OptimizerConfig::Kind::kMomentum, &memory);
  EXPECT_EQ(recorded.params, train(g, true, 2, OptimizerConfig::Kind::kMomentum).params);
  EXPECT_EQ(memory.offload_memories, 1);
  ASSERT_FALSE(memory.calls.empty());
  // Each fetch is ordered (not waited for) before the next fetch is
  // submitted; every write-back is waited for before the pass ends, which
  // is before the next pass's first fetch.
  uint64_t fetch = 0, write_back = 0, waited = 0;
  int fetches = 0, write_backs = 0;
  for (const RecordingQueue::Call& c : memory.calls) {
    switch (c.what) {
      case 'f':
        EXPECT_EQ(fetch, 0u) << "fetch " << c.ticket << " submitted before fetch " << fetch << " was ordered";
        fetch = c.ticket;
        ++fetches;
        break;
      case 'b':
        write_back = c.ticket;
        ++write_backs;
        break;
      case 'o':
        EXPECT_EQ(c.ticket, fetch) << "the fetch submitted last is the one ordered";
        fetch = 0;
        break;
      case 'w': waited = std::max(waited, c.ticket); break;
    }
  }
  EXPECT_EQ(fetch, 0u) << "the last fetch was ordered";
  EXPECT_GE(waited, write_back) << "the last write-back was waited for";
  EXPECT_GT(fetches, 0);
  EXPECT_GT(write_backs, 0);
  EXPECT_EQ(memory.calls.back().what, 'w') << "a pass ends with its copies done";
}

}  // namespace
}  // namespace devmap
