// The name of the command the user ran, for messages and --help that tell
// them what to type next ("usage: devmap train CONFIG", "run `devmap
// calibrate CONFIG`").
#pragma once

#include <string>

namespace devmap {

// Records argv[0]; main() calls it once, before anything prints.
void set_command_name(const char* argv0);

// $DEVMAP_LAUNCH_AS when set and not empty (scripts/launch.sh names itself
// there, as the user ran it), else the last path component of the argv[0]
// given to set_command_name ("devmap" installed, "coordinator" in a build
// folder), else "devmap" when set_command_name was never called (tests
// that link the library).
std::string command_name();

}  // namespace devmap
