// Runs a program with arguments (no shell interpretation of them) and
// captures what it prints on stdout and stderr, for the short queries the
// coordinator makes of its worker programs (--probe, --describe).
#pragma once

#include <string>
#include <vector>

namespace devmap {

struct ProgramOutput {
  bool ran = false;        // false: it could not be started (not found, say)
  int status = -1;         // its exit status; -1 when it did not exit normally
  bool timed_out = false;  // it gave no end within the time bound and was killed
  std::string text;        // stdout and stderr, trailing blanks removed
};

// Runs argv[0] (looked up on PATH) with no standard input, at most
// `timeout_seconds` (a wedged driver, a FIFO where a file was expected): then,
// or at a stop signal, it is killed.
ProgramOutput run_program(const std::vector<std::string>& argv, double timeout_seconds = 60);

// run_program(argv) the first time this process asks for that argv, and
// its remembered output after: for the queries whose answer a worker
// program's build fixes (--describe, --fma-peak). Not thread-safe.
const ProgramOutput& run_program_once(const std::vector<std::string>& argv);

}  // namespace devmap
