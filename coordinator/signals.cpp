#include "coordinator/signals.h"

#include <signal.h>

#include <atomic>

namespace devmap {
namespace {

std::atomic<int> g_signal{0};

void on_signal(int sig) {
  g_signal.store(sig);
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

}  // namespace devmap
