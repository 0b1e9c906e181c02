#include "kernels/cpu/onednn_runtime.h"

#include <omp.h>

namespace devmap::cpu {
namespace {

// oneDNN's widest instruction set for a CPU path.
dnnl::cpu_isa isa_of(CpuPath path) {
  switch (path) {
    case CpuPath::kAvx512: return dnnl::cpu_isa::avx512_core;
    case CpuPath::kAvx2: return dnnl::cpu_isa::avx2;
    case CpuPath::kBaseline: break;
  }
  return dnnl::cpu_isa::sse41;
}

struct Engine {
  CpuPath path;
  dnnl::engine engine;
};

// The engine, made once; before it, oneDNN's instruction set is capped at
// the active CPU path's (it can be set only before oneDNN generates code).
Engine& the_engine() {
  static Engine e = [] {
    const CpuPath path = active_cpu_path();
    dnnl_set_max_cpu_isa(static_cast<dnnl_cpu_isa_t>(isa_of(path)));
    return Engine{path, dnnl::engine(dnnl::engine::kind::cpu, 0)};
  }();
  return e;
}

}  // namespace

dnnl::engine& onednn_engine() {
  return the_engine().engine;
}

dnnl::stream& onednn_thread_stream() {
  thread_local dnnl::stream s(onednn_engine());
  return s;
}

void onednn_single_threaded() {
  thread_local const bool done = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)done;
}

CpuPath onednn_cpu_path() {
  return the_engine().path;
}

std::string onednn_isa_name() {
  onednn_engine();
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::sse41: return "sse41";
    default: break;
  }
  return "another";
}

std::string onednn_description() {
  const std::string isa = onednn_isa_name();
  const dnnl_version_t* v = dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "another CPU runtime";
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " (" +
         runtime + "), instruction set " + isa;
}

}  // namespace devmap::cpu
