// DEVMAP_HD marks functions that nvcc compiles for the device and the host
// compiler for the host. The hand-written kernels keep their per-thread
// logic in such functions (philox.h, pool_logic.h, loss_logic.h, ...), so
// that tests run that exact logic on the CPU, without a GPU, against the
// CPU kernels; the __global__ kernels only map threads to it.
#pragma once

#if defined(__CUDACC__)
#define DEVMAP_HD __host__ __device__
#else
#define DEVMAP_HD
#endif
