// Test helpers that run the real binaries and read what they leave behind.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" char** environ;

namespace devmap::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out, err;
  std::string first_err_line() const { return err.substr(0, err.find('\n')); }
};

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs argv through /bin/sh with stdout and stderr captured in files under
// `dir`; `env` is prepended as VAR=value words.
inline ProcessResult run_process(const std::vector<std::string>& argv, const std::string& dir,
                                 const std::vector<std::string>& env = {}) {
  std::string cmd;
  for (const auto& e : env) cmd += e + " ";
  for (const auto& a : argv) cmd += shell_quote(a) + " ";
  std::string out = dir + "/stdout.txt", err = dir + "/stderr.txt";
  cmd += "> " + shell_quote(out) + " 2> " + shell_quote(err) + " < /dev/null";
  int status = std::system(cmd.c_str());
  ProcessResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// A process started in the background (posix_spawn), its stdout and
// stderr in files under `dir`; `env` adds VAR=value entries to this
// process's environment. The destructor kills and reaps it if it still runs.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& dir,
                    const std::vector<std::string>& env = {})
      : out_(dir + "/bg-stdout.txt"), err_(dir + "/bg-stderr.txt") {
    std::vector<std::string> envs;
    for (char** e = environ; *e; ++e) envs.emplace_back(*e);
    envs.insert(envs.end(), env.begin(), env.end());
    std::vector<char*> a, ev;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (const auto& s : envs) ev.push_back(const_cast<char*>(s.c_str()));
    ev.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, a[0], &fa, nullptr, a.data(), ev.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~BackgroundProcess() {
    if (pid_ > 0 && exit_code_ < 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The exit code (128 + signal when killed), or -1 when it is still running
  // after `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (exit_code_ < 0) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return exit_code_;
  }
  std::string err() const { return read_file(err_); }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string out_, err_;
};

// Whether `pid` has ended: no such process, or a zombie nobody reaped yet.
inline bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  return stat.empty() || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z');
}

// Names in /dev/shm that start with `prefix`.
inline std::vector<std::string> shm_entries(const std::string& prefix) {
  std::vector<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0) names.push_back(n);
    }
    closedir(d);
  }
  return names;
}

// Every entry under `dir`, recursively (sockets, run directories).
inline std::vector<std::string> tree_entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    out.push_back(it->path().string());
  return out;
}

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "devmap-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Coordinator options under which every cost is the fixed FLOPs estimate,
// the same on every machine: a calibration file that does not exist in
// `dir` and a worker directory without workers (no FMA peak to probe).
inline std::vector<std::string> fixed_cost_options(const std::string& dir) {
  return {"--calibration", dir + "/none.tsv", "--worker-dir", dir + "/none"};
}

// Polls `done` every 5 ms until it holds (true) or `timeout` passes (false).
inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace devmap::testing
