// WorkerProcess: one child process started with posix_spawn in its own
// process group (so a terminal's Ctrl-C reaches only the coordinator). The
// destructor kills and reaps a child that is still running.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace devmap {

class WorkerProcess {
 public:
  // Starts `program` with `args` and this process's environment. Throws
  // devmap::Error (kRuntime) when the program cannot be started.
  WorkerProcess(const std::string& program, const std::vector<std::string>& args, std::string label);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& label() const { return label_; }  // "worker_cpu for cpu:0"

  // Non-blocking: the exit description once the process has ended
  // ("exited with status 1", "was killed by signal 9 (Killed)").
  std::optional<std::string> poll_exit();
  // Waits up to `timeout_ms` for a clean exit, then SIGKILLs; returns the
  // exit description.
  std::string stop(int timeout_ms);

 private:
  std::string describe(int status) const;

  pid_t pid_ = -1;
  std::string label_;
  std::optional<std::string> exit_;
};

}  // namespace devmap
