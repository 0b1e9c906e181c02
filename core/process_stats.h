// Facts about the running process read from /proc (Linux).
#pragma once

#include <cstdint>

namespace devmap {

// Peak resident set size (VmHWM) of this process in bytes, or 0 if unknown.
uint64_t read_vm_hwm_bytes();

}  // namespace devmap
