// oneDNN as the CPU kernels use it (the convolution of conv2d_onednn.h and
// the sgemm of blas.h): one engine per process, made at first use, before
// which oneDNN's instruction set is capped at the active CPU path's
// (avx512_core, avx2, sse41 for the baseline); it stays so for the process.
// oneDNN is built on OpenMP; a thread that calls it asks for one thread, so
// that every call runs on its caller alone (the pool is ours).
#pragma once

#include <string>

#include "core/exec/cpu_path.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace devmap::cpu {

// The process's engine (the first call caps the instruction set).
dnnl::engine& onednn_engine();

// This thread's stream on the engine.
dnnl::stream& onednn_thread_stream();

// Makes oneDNN calls from this thread single-threaded (once per thread).
void onednn_single_threaded();

// The CPU path oneDNN's instruction set follows in this process: the active
// path when oneDNN was first used (this call uses it).
CpuPath onednn_cpu_path();

// oneDNN's instruction set here: "avx512_core", "avx2", "sse41".
std::string onednn_isa_name();

// "oneDNN 2.6.3 (OpenMP), instruction set avx512_core": the library that
// runs and what it runs here.
std::string onednn_description();

}  // namespace devmap::cpu
