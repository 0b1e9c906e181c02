#include "coordinator/util/command_name.h"

#include <cstdlib>

namespace devmap {
namespace {

std::string& program_name() {
  static std::string name = "devmap";
  return name;
}

}  // namespace

void set_command_name(const char* argv0) {
  if (!argv0 || !*argv0) return;
  std::string name = argv0;
  name = name.substr(name.find_last_of('/') + 1);
  if (!name.empty()) program_name() = name;
}

std::string command_name() {
  if (const char* launched_as = std::getenv("DEVMAP_LAUNCH_AS"); launched_as && *launched_as) return launched_as;
  return program_name();
}

}  // namespace devmap
