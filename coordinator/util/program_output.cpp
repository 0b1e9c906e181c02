#include "coordinator/util/program_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>

#include "coordinator/util/signals.h"

extern char** environ;

namespace devmap {

ProgramOutput run_program(const std::vector<std::string>& argv, double timeout_seconds) {
  ProgramOutput out;
  int pipe_fds[2];
  if (argv.empty() || ::pipe2(pipe_fds, O_CLOEXEC) != 0) return out;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return out;
  }
  out.ran = true;
  // Read until end of file, the time bound, or a stop signal.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  char buf[512];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || interrupted()) {
      out.timed_out = left.count() <= 0;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.text.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.status = !out.timed_out && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!out.text.empty() && (out.text.back() == '\n' || out.text.back() == ' ')) out.text.pop_back();
  if (out.timed_out)
    out.text += (out.text.empty() ? "" : "\n") + std::string("(no answer in ") +
                std::to_string(static_cast<int>(timeout_seconds + 0.5)) + " s: stopped)";
  return out;
}

const ProgramOutput& run_program_once(const std::vector<std::string>& argv) {
  static std::map<std::vector<std::string>, ProgramOutput> answered;
  auto it = answered.find(argv);
  if (it == answered.end()) it = answered.emplace(argv, run_program(argv)).first;
  return it->second;
}

}  // namespace devmap
