// ProgressBar: one line on stderr that redraws in place on a terminal
// ("epoch 1/2 [#####.....] 312/938 mean loss 0.4321 1234 img/s lr 0.01 ETA 0:32"); when
// stderr is not a terminal it prints a plain line every `every` steps and
// at the end instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace devmap {

class ProgressBar {
 public:
  // Off: no bar draws anything (a data-parallel replica other than the
  // first, whose stderr mpirun mixes with replica 0's).
  static void set_quiet(bool quiet);
  ProgressBar(std::string title, int64_t total, int64_t every);
  // Reports `done` of total units; `status` follows the counters.
  void update(int64_t done, const std::string& status);
  // Ends the line with a final status, at `done` of total units (a run
  // that stopped early), or at the total.
  void finish(const std::string& status, int64_t done = -1);

 private:
  void draw(int64_t done, const std::string& status, bool final);

  std::string title_;
  int64_t total_, every_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t last_printed_ = -1;
};

}  // namespace devmap
