#include "coordinator/program_output.h"

#include <sys/wait.h>

#include <cstdio>
#include <map>

namespace devmap {
namespace {

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

ProgramOutput run_program(const std::vector<std::string>& argv) {
  ProgramOutput out;
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + shell_quoted(a);
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return out;
  out.ran = true;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.text.append(buf, n);
  const int status = ::pclose(f);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!out.text.empty() && (out.text.back() == '\n' || out.text.back() == ' ')) out.text.pop_back();
  return out;
}

const ProgramOutput& run_program_once(const std::vector<std::string>& argv) {
  static std::map<std::vector<std::string>, ProgramOutput> answered;
  auto it = answered.find(argv);
  if (it == answered.end()) it = answered.emplace(argv, run_program(argv)).first;
  return it->second;
}

}  // namespace devmap
