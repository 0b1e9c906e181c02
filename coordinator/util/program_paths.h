// Where the coordinator finds the programs it starts (worker_cpu,
// worker_gpu, devmap_run_guard): beside its own executable (a build folder:
// build/<preset>/bin) or, installed, in the helper folder relative to it
// (<prefix>/bin/devmap and <prefix>/libexec/devmap/).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace devmap {

// The folders to look in, in order: the running executable's folder, then
// the installed helper folder relative to it (DEVMAP_HELPER_DIR_FROM_BIN,
// set by CMake from its install directories). Empty when /proc/self/exe
// cannot be read.
std::vector<std::filesystem::path> companion_program_dirs();

// The first of companion_program_dirs()/name that is executable, or ""
// when none is.
std::string find_companion_program(const std::string& name);

}  // namespace devmap
