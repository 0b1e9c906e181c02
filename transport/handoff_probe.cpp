#include "transport/handoff_probe.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <zmq.hpp>

#include "core/base/error.h"
#include "transport/run_names.h"
#include "transport/shm_channel.h"
#include "transport/shm_segment.h"

namespace devmap {
namespace {

// The two data sockets in the caller's folder, removed on every exit path.
struct Endpoints {
  std::map<std::string, std::string> paths;
  explicit Endpoints(const std::string& dir)
      : paths{{"cpu:0", data_socket_path(dir, "cpu:0")}, {"cpu:1", data_socket_path(dir, "cpu:1")}} {}
  ~Endpoints() {
    for (auto& [d, p] : paths) ::unlink(p.c_str());
  }
};

}  // namespace

HandoffTiming measure_handoffs(size_t bytes, double budget_seconds, const HandoffPlace& place) {
  bytes = std::max<size_t>(bytes, 8);
  Endpoints ep(place.socket_dir);
  ChannelEdge edge{0, edge_segment_name(place.segment_prefix + "handoff-", 0), bytes, 2, "cpu:0", {"cpu:1"}};
  ShmSegment segment = ShmSegment::create(edge.segment, bytes * 2);
  // A count that takes about the budget at a few GB/s plus ~50 us each.
  const int count =
      static_cast<int>(std::clamp(budget_seconds * 4e9 / static_cast<double>(bytes + 200000), 20.0, 20000.0));
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) throw_runtime(std::string("cannot fork the handoff consumer: ") + std::strerror(errno));
  if (child == 0) {
    // Killed with its parent, however the parent ends (it may be gone already).
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(1);
    int status = 0;
    try {
      zmq::context_t ctx(1);
      ShmChannel ch(ctx, "cpu:1", ep.paths, {edge}, nullptr);
      volatile uint64_t sink = 0;
      for (int s = 0; s < count; ++s) {
        const auto* p = reinterpret_cast<const uint64_t*>(ch.receive(0, s));
        uint64_t sum = 0;
        for (size_t i = 0; i < bytes / 8; ++i) sum += p[i];  // read every byte
        sink = sink + sum;
        ch.release(s);
      }
    } catch (...) {
      status = 1;
    }
    ::_exit(status);
  }
  bool reaped = false;
  auto consumer_alive = [&] {
    int status = 0;
    if (!reaped && ::waitpid(child, &status, WNOHANG) == child) {
      reaped = true;
      throw_runtime("the handoff consumer (pid " + std::to_string(child) + ") ended early");
    }
  };
  HandoffTiming t;
  t.bytes = bytes;
  t.count = count;
  try {
    zmq::context_t ctx(1);
    ShmChannel ch(ctx, "cpu:0", ep.paths, {edge}, consumer_alive);
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < count; ++s) {
      float* slot = ch.acquire(0, s, bytes);
      slot[0] = static_cast<float>(s);  // the producer's kernel writes here
      ch.send(0, s);
    }
    ch.acquire(0, count, 8);
    ch.acquire(0, count + 1, 8);  // both slots released: the consumer has read everything
    t.seconds_per_handoff =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / static_cast<double>(count);
    t.bytes_copied = ch.stats().bytes_copied;
  } catch (...) {
    if (!reaped) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
    throw;
  }
  if (!reaped) ::waitpid(child, nullptr, 0);
  return t;
}

}  // namespace devmap
