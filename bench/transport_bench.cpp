// Transport between two processes: a producer hands tensors of 4 KiB,
// 1 MiB and 16 MiB to a forked consumer through a shared-memory slot ring
// signalled over ZeroMQ; the consumer reads every byte. Prints the latency
// per handoff and the effective GB/s, beside a bare 64-byte ZeroMQ ipc
// round trip and a one-thread memcpy of 16 MiB for scale.
//
//   transport_bench [--seconds S]     (default 1 second per size)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "transport/run_names.h"
#include "transport/shm_channel.h"
#include "transport/shm_segment.h"

namespace {

using Clock = std::chrono::steady_clock;
using devmap::ChannelEdge;
using devmap::ShmChannel;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Endpoints {
  std::string dir;
  std::map<std::string, std::string> paths;
  Endpoints() {
    char tmpl[] = "/tmp/devmap-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    paths = {{"cpu:0", devmap::data_socket_path(dir, "cpu:0")}, {"cpu:1", devmap::data_socket_path(dir, "cpu:1")}};
  }
  ~Endpoints() {
    for (auto& [d, p] : paths) ::unlink(p.c_str());
    ::rmdir(dir.c_str());
  }
};

// Median of per-handoff times over `count` handoffs of `bytes`.
void handoffs(size_t bytes, double budget) {
  Endpoints ep;
  std::string prefix = "devmap-" + std::to_string(::getpid()) + "-bench-";
  ChannelEdge edge{0, devmap::edge_segment_name(prefix, 0), bytes, 2, "cpu:0", {"cpu:1"}};
  devmap::ShmSegment seg = devmap::ShmSegment::create(edge.segment, bytes * 2);
  // Calibrate a count that takes about `budget` seconds.
  int count = static_cast<int>(std::clamp(budget * 4e9 / static_cast<double>(bytes + 200000), 20.0, 20000.0));
  pid_t child = ::fork();
  if (child == 0) {
    {  // sockets close (and flush) before _exit
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
    }
    ::_exit(0);
  }
  zmq::context_t ctx(1);
  ShmChannel ch(ctx, "cpu:0", ep.paths, {edge}, nullptr);
  auto t0 = Clock::now();
  for (int s = 0; s < count; ++s) {
    float* slot = ch.acquire(0, s, bytes);
    slot[0] = static_cast<float>(s);  // the producer's kernel would write here
    ch.send(0, s);
  }
  ch.acquire(0, count, 4);
  ch.acquire(0, count + 1, 4);  // both slots released: the consumer has read everything
  double t = seconds_since(t0);
  ::waitpid(child, nullptr, 0);
  std::printf("%10zu B  %8d handoffs  %10.1f us/handoff  %8.2f GB/s  copied %llu B\n", bytes, count, t / count * 1e6,
              static_cast<double>(bytes) * count / t / 1e9, static_cast<unsigned long long>(ch.stats().bytes_copied));
}

void zmq_round_trip() {
  Endpoints ep;
  std::string a = "ipc://" + ep.dir + "/ping.sock";
  constexpr int kCount = 2000;
  pid_t child = ::fork();
  if (child == 0) {
    {  // the socket closes (and flushes the last reply) before _exit
      zmq::context_t ctx(1);
      zmq::socket_t s(ctx, zmq::socket_type::rep);
      s.set(zmq::sockopt::linger, 1000);
      s.connect(a);
      zmq::message_t m;
      for (int i = 0; i < kCount; ++i) {
        (void)s.recv(m);
        s.send(m, zmq::send_flags::none);
      }
    }
    ::_exit(0);
  }
  zmq::context_t ctx(1);
  zmq::socket_t s(ctx, zmq::socket_type::req);
  s.bind(a);
  std::vector<double> rtt;
  char payload[64] = {};
  zmq::message_t m;
  for (int i = 0; i < kCount; ++i) {
    auto t0 = Clock::now();
    s.send(zmq::buffer(payload, sizeof payload), zmq::send_flags::none);
    (void)s.recv(m);
    rtt.push_back(seconds_since(t0));
  }
  ::waitpid(child, nullptr, 0);
  std::sort(rtt.begin(), rtt.end());
  std::printf("ZeroMQ ipc 64 B round trip: median %.1f us, p90 %.1f us\n", rtt[rtt.size() / 2] * 1e6,
              rtt[rtt.size() * 9 / 10] * 1e6);
  ::unlink((ep.dir + "/ping.sock").c_str());
}

void memcpy_16mib() {
  std::vector<char> a(16 << 20, 1), b(16 << 20);
  std::memcpy(b.data(), a.data(), a.size());
  auto t0 = Clock::now();
  for (int i = 0; i < 20; ++i) std::memcpy(b.data(), a.data(), a.size());
  double t = seconds_since(t0);
  std::printf("memcpy 16 MiB, one thread: %.2f GB/s\n", 20.0 * static_cast<double>(a.size()) / t / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  double budget = 1.0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      budget = std::atof(argv[++i]);
    } else {
      std::printf("usage: transport_bench [--seconds S]\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  zmq_round_trip();
  memcpy_16mib();
  for (size_t bytes : {size_t{4} << 10, size_t{1} << 20, size_t{16} << 20}) handoffs(bytes, budget);
  return 0;
}
