#include "coordinator/util/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace devmap {

namespace {
bool quiet_bars = false;
}  // namespace

void ProgressBar::set_quiet(bool quiet) {
  quiet_bars = quiet;
}

ProgressBar::ProgressBar(std::string title, int64_t total, int64_t every)
    : title_(std::move(title)),
      total_(total),
      every_(every > 0 ? every : 1),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int64_t done, const std::string& status) {
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
    last_draw_ = now;
    draw(done, status, false);
  } else if (done % every_ == 0 && done != last_printed_ && done < total_) {
    last_printed_ = done;
    draw(done, status, false);
  }
}

void ProgressBar::finish(const std::string& status, int64_t done) {
  draw(done < 0 ? total_ : done, status, true);
}

void ProgressBar::draw(int64_t done, const std::string& status, bool final) {
  if (quiet_bars) return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  constexpr int kWidth = 24;
  std::string bar(kWidth, '.');
  for (int i = 0; i < static_cast<int>(frac * kWidth) && i < kWidth; ++i) bar[static_cast<size_t>(i)] = '#';
  char eta[32] = "";
  if (!final && done > 0) {
    auto left = static_cast<int64_t>(elapsed / static_cast<double>(done) * static_cast<double>(total_ - done));
    std::snprintf(eta, sizeof eta, " ETA %lld:%02lld", static_cast<long long>(left / 60),
                  static_cast<long long>(left % 60));
  } else if (final) {
    std::snprintf(eta, sizeof eta, " in %.1fs", elapsed);
  }
  std::fprintf(stderr, "%s%s [%s] %lld/%lld %s%s%s", tty_ ? "\r\033[K" : "", title_.c_str(), bar.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), status.c_str(), eta,
               (tty_ && !final) ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace devmap
