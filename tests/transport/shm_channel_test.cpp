// The slot ring between two real processes: a forked consumer reads what
// the producer wrote, in place, and the producer never overwrites a slot
// the consumer still holds.
#include "transport/shm_channel.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/base/error.h"
#include "transport/run_names.h"
#include "transport/shm_segment.h"

namespace devmap {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kFloats = 1 << 16;  // 256 KiB tensors

struct Ring {
  std::string dir, prefix;
  std::unique_ptr<ShmSegment> segment;
  std::map<std::string, std::string> endpoints;
  std::vector<ChannelEdge> edges;

  Ring() {
    char tmpl[] = "/tmp/devmap-ringtest-XXXXXX";
    dir = mkdtemp(tmpl);
    prefix = "devmap-" + std::to_string(::getpid()) + "-ringtest-";
    ChannelEdge e{0, edge_segment_name(prefix, 0), kFloats * 4, 2, "cpu:0", {"cpu:1"}};
    segment = std::make_unique<ShmSegment>(ShmSegment::create(e.segment, e.slot_bytes * e.slots));
    endpoints = {{"cpu:0", data_socket_path(dir, "cpu:0")}, {"cpu:1", data_socket_path(dir, "cpu:1")}};
    edges = {e};
  }
  ~Ring() {
    for (auto& [d, p] : endpoints) ::unlink(p.c_str());
    ::rmdir(dir.c_str());
  }
};

// Both processes of a test die by SIGALRM after this long: when one of
// them fails (a sanitizer's halt_on_error included), the other would
// otherwise wait on the ring for ever.
constexpr unsigned kHangSeconds = 60;

struct HangAlarm {
  HangAlarm() { ::alarm(kHangSeconds); }
  ~HangAlarm() { ::alarm(0); }
};

float pattern(int64_t step, size_t i) {
  return static_cast<float>(step * 1000003 + static_cast<int64_t>(i % 977));
}

// Runs `body` in a child process with its own ZeroMQ context; returns its
// exit status (0 when body returned true).
template <typename Body>
pid_t spawn_child(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(kHangSeconds);  // alarms are not inherited across fork
    int code = 1;
    try {
      code = body() ? 0 : 1;  // body's sockets close (and flush) before _exit
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 2;
    }
    ::_exit(code);
  }
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(ShmChannel, AConsumerProcessReadsEveryTensorInPlace) {
  HangAlarm alarm;
  Ring ring;
  constexpr int kSteps = 50;
  pid_t child = spawn_child([&] {
    zmq::context_t ctx(1);
    ShmChannel ch(ctx, "cpu:1", ring.endpoints, ring.edges, nullptr);
    for (int64_t s = 0; s < kSteps; ++s) {
      const float* x = ch.receive(0, s);
      for (size_t i = 0; i < kFloats; ++i)
        if (x[i] != pattern(s, i)) return false;
      ch.release(s);
    }
    return ch.stats().bytes_copied == 0;
  });
  {
    zmq::context_t ctx(1);
    ShmChannel ch(ctx, "cpu:0", ring.endpoints, ring.edges, nullptr);
    for (int64_t s = 0; s < kSteps; ++s) {
      float* slot = ch.acquire(0, s, kFloats * 4);
      for (size_t i = 0; i < kFloats; ++i) slot[i] = pattern(s, i);
      ch.send(0, s);
    }
    // Wait for the last release so the child is done before the ring goes.
    ch.acquire(0, kSteps, 4);
    ch.acquire(0, kSteps, 4);
    EXPECT_EQ(ch.stats().handoffs, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(ch.stats().bytes_copied, 0u) << "CPU-to-CPU edges are read in place, never copied";
  }
  EXPECT_EQ(wait_child(child), 0);
}

TEST(ShmChannel, AProducerWaitsForTheConsumerToReleaseASlot) {
  HangAlarm alarm;
  Ring ring;
  pid_t child = spawn_child([&] {
    zmq::context_t ctx(1);
    ShmChannel ch(ctx, "cpu:1", ring.endpoints, ring.edges, nullptr);
    const float* a = ch.receive(0, 0);
    const float* b = ch.receive(0, 1);
    // Hold both slots for a while: the producer must not overwrite them.
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    bool intact = a[0] == 0.0f && a[kFloats - 1] == 0.0f && b[0] == 1.0f && b[kFloats - 1] == 1.0f;
    ch.release(1);  // releases every slot held: both steps' slots
    const float* c = ch.receive(0, 2);
    bool third = c[0] == 2.0f;
    ch.release(2);
    return intact && third;
  });
  zmq::context_t ctx(1);
  ShmChannel ch(ctx, "cpu:0", ring.endpoints, ring.edges, nullptr);
  for (int64_t s = 0; s < 2; ++s) {
    float* slot = ch.acquire(0, s, kFloats * 4);
    std::fill(slot, slot + kFloats, static_cast<float>(s));
    ch.send(0, s);
  }
  auto t0 = Clock::now();
  float* slot = ch.acquire(0, 2, kFloats * 4);  // both slots are held: waits for a release
  double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  std::fill(slot, slot + kFloats, 2.0f);
  ch.send(0, 2);
  EXPECT_GT(waited, 0.25) << "acquire returned a slot the consumer still held";
  ch.acquire(0, 3, 4);
  EXPECT_EQ(wait_child(child), 0);
}

TEST(ShmChannel, ATensorLargerThanItsSlotIsAnError) {
  Ring ring;
  zmq::context_t ctx(1);
  ShmChannel ch(ctx, "cpu:0", ring.endpoints, ring.edges, nullptr);
  EXPECT_THROW(ch.acquire(0, 0, kFloats * 4 + 1), Error);
}

}  // namespace
}  // namespace devmap
