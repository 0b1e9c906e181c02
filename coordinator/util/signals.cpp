#include "coordinator/util/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace devmap {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_signal{0};
std::atomic<int> g_count{0};
std::atomic<int64_t> g_first_ns{0};  // steady clock at the first signal
std::atomic<int64_t> g_grace_ms{30000};

void on_signal(int sig) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    g_first_ns.store(Clock::now().time_since_epoch().count());
    const char msg[] = "\ndevmap: stopping after the step in progress (press Ctrl-C again to abort at once)\n";
    (void)!::write(2, msg, sizeof msg - 1);
  }
  g_count.fetch_add(1);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int interrupt_signal() {
  return g_signal.load();
}

bool abort_requested() {
  if (g_count.load() == 0) return false;
  if (g_count.load() > 1) return true;
  auto since = Clock::now() - Clock::time_point(Clock::duration(g_first_ns.load()));
  return since > std::chrono::milliseconds(g_grace_ms.load());
}

void set_grace_period(std::chrono::milliseconds grace) {
  g_grace_ms.store(grace.count());
}

std::chrono::milliseconds grace_period() {
  return std::chrono::milliseconds(g_grace_ms.load());
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace devmap
