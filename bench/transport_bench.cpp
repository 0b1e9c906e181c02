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

#include "transport/handoff_probe.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Back-to-back handoffs of `bytes` (transport/handoff_probe.h): time per handoff and GB/s.
void handoffs(size_t bytes, double budget) {
  char tmpl[] = "/tmp/devmap-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const devmap::HandoffTiming t =
      devmap::measure_handoffs(bytes, budget, {"devmap-bench-" + std::to_string(::getpid()) + "-", dir});
  ::rmdir(dir.c_str());
  std::printf("%10zu B  %8d handoffs  %10.1f us/handoff  %8.2f GB/s  copied %llu B\n", bytes, t.count,
              t.seconds_per_handoff * 1e6, static_cast<double>(bytes) / t.seconds_per_handoff / 1e9,
              static_cast<unsigned long long>(t.bytes_copied));
}

void zmq_round_trip() {
  char tmpl[] = "/tmp/devmap-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  std::string a = "ipc://" + dir + "/ping.sock";
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
  ::unlink((dir + "/ping.sock").c_str());
  ::rmdir(dir.c_str());
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
