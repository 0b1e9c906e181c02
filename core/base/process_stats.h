// Facts about the running process: from /proc (Linux) and the kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace devmap {

// Peak resident set size (VmHWM) of this process in bytes, or 0 if unknown.
uint64_t read_vm_hwm_bytes();

// This machine's host name (gethostname), or nothing when it cannot be read.
std::optional<std::string> host_name();

}  // namespace devmap
