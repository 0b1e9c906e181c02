// ThreadCopyQueue (core/exec/thread_copy_queue.h): batches run in queue order on the
// queue's thread, wait() returns once a batch and those before it ran, and
// traced batches come back as intervals that follow one another.
#include <gtest/gtest.h>

#include <vector>

#include "core/exec/host_memory.h"
#include "core/exec/thread_copy_queue.h"

namespace devmap {
namespace {

TEST(CopyQueue, RunsBatchesInQueueOrder) {
  HostMemory memory("cpu:0", 0);
  std::vector<float> a(1 << 20, 1.0f), b(1 << 20, 2.0f), device(1 << 20, 0.0f), host(1 << 20, 0.0f);
  ThreadCopyQueue queue(memory);
  const size_t bytes = a.size() * sizeof(float);
  CopyQueue::Batch first{true, {{device.data(), a.data(), bytes}}, true, TraceEvent{0, 0, 3, 0, 7, TraceKind::kFetch}};
  CopyQueue::Batch second{true, {{device.data(), b.data(), bytes}}, true, TraceEvent{0, 0, 3, 0, 8, TraceKind::kFetch}};
  CopyQueue::Batch back{false, {{host.data(), device.data(), bytes}}, false, TraceEvent{}};
  const uint64_t t1 = queue.submit(std::move(first));
  const uint64_t t2 = queue.submit(std::move(second));
  const uint64_t t3 = queue.submit(std::move(back));
  EXPECT_LT(t1, t2);
  EXPECT_LT(t2, t3);
  queue.wait(t3);
  EXPECT_EQ(device.front(), 2.0f) << "the later batch wrote last";
  EXPECT_EQ(host.back(), 2.0f) << "the write-back ran after both";
  std::vector<TraceEvent> events;
  queue.take_events(events);
  ASSERT_EQ(events.size(), 2u) << "the untraced batch is not an event";
  EXPECT_EQ(events[0].id, 7);
  EXPECT_EQ(events[1].id, 8);
  EXPECT_LE(events[0].start_ns, events[0].end_ns);
  EXPECT_LE(events[0].end_ns, events[1].start_ns);
  EXPECT_EQ(events[1].kind, TraceKind::kFetch);
  events.clear();
  queue.take_events(events);
  EXPECT_TRUE(events.empty()) << "taken once";
}

TEST(CopyQueue, DrainWaitsForEverythingQueued) {
  HostMemory memory("cpu:0", 0);
  std::vector<float> src(1 << 18, 5.0f);
  std::vector<std::vector<float>> dst(8, std::vector<float>(src.size(), 0.0f));
  ThreadCopyQueue queue(memory);
  for (auto& d : dst) queue.submit(CopyQueue::Batch{true, {{d.data(), src.data(), src.size() * 4}}, false, {}});
  queue.drain();
  for (const auto& d : dst) EXPECT_EQ(d.back(), 5.0f);
}

}  // namespace
}  // namespace devmap
