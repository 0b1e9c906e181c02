// Test helpers that run the real binaries and read what they leave behind.
#pragma once

#include <dirent.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace devmap::testing
