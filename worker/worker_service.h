// The worker process's main loop, shared by every device kind: connect to
// the coordinator, HELLO, receive the plan, build the executor with this
// device's kernels, then run steps until SHUTDOWN. Any failure is reported
// to the coordinator as an ERROR message (and on stderr) before exiting 1.
// The worker also exits when its parent (the coordinator) disappears.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/exec/device_memory.h"
#include "core/exec/kernel.h"

namespace devmap {

struct WorkerRuntime {
  std::string program;                    // "worker_cpu"
  std::string device_kind;                // "cpu"
  const KernelFactory* kernels;           // this device kind's kernels
  std::function<void(int)> set_threads;   // tells libraries (OpenBLAS) how many threads to use, and readies them
  std::function<std::string()> describe;  // the compute libraries and their versions
  // The FP32 peak of one core in FLOP/s (a measured FMA probe), asked for
  // once when --profile is on and by `--fma-peak` (the coordinator's
  // estimate of an uncalibrated device); null: not reported (a GPU).
  std::function<double()> peak_flops_per_core;
  // The device's memory with `limit_bytes` (0: the device's default); null:
  // host memory (HostMemory).
  std::function<std::unique_ptr<DeviceMemory>(const std::string& device, uint64_t limit_bytes)> make_memory;
};

int worker_main(int argc, char** argv, const WorkerRuntime& runtime);

}  // namespace devmap
