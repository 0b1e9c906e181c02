// Error tiers (see docs/ARCHITECTURE.md): a bug is an assert; a user's
// mistake or a failing resource is a devmap::Error; would-block is an
// empty optional.
#pragma once

#include <stdexcept>
#include <string>

namespace devmap {

enum class ErrorKind {
  kInvalidInput,  // the user's config, data or command line is wrong: exit 2
  kRuntime,       // a resource failed (file, process, memory): exit 1
};

// The one exception type devmap throws for expected failures. The message
// says what went wrong, where (file:line:col, op, shape, bytes) and what to
// do about it.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message) : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  int exit_code() const { return kind_ == ErrorKind::kInvalidInput ? 2 : 1; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void throw_invalid(std::string message) {
  throw Error(ErrorKind::kInvalidInput, std::move(message));
}
[[noreturn]] inline void throw_runtime(std::string message) {
  throw Error(ErrorKind::kRuntime, std::move(message));
}

// A place in a source file (a config), 1-based. Core carries it so that
// graph errors can name the line the user wrote; it knows nothing of YAML.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  bool known() const { return line > 0; }
  std::string prefix() const {  // "file:line:col: " or ""
    return known() ? file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " : "";
  }
};

}  // namespace devmap
