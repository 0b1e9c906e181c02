// worker_cpu: a worker process whose kernels run on the CPU (OpenBLAS or oneDNN GEMMs, oneDNN
// convolutions, and devmap's own kernels per CPU path).
#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "kernels/cpu/fma_peak.h"
#include "worker/worker_service.h"

int main(int argc, char** argv) {
  devmap::CpuKernelFactory kernels;
  devmap::WorkerRuntime rt;
  rt.program = "worker_cpu";
  rt.device_kind = "cpu";
  rt.kernels = &kernels;
  rt.set_threads = [](int /*threads*/) {
    // The executor's ThreadPool sizes itself; OpenBLAS computes in the
    // calling thread so its threads do not compete with the pool's.
    devmap::cpu::pin_blas_to_one_thread();
    devmap::cpu::warm_up_gemms();  // before the first step, once the plan has come
  };
  rt.describe = [] {
    using devmap::cpu::gemm_kernel_name;
    return "gemm " + gemm_kernel_name() + ", dense gradients " + gemm_kernel_name(devmap::GemmUse::kDenseGradient) +
           "; cpu path " + devmap::cpu_path_name(devmap::active_cpu_path());
  };
  rt.peak_flops_per_core = [] {
    return devmap::cpu::cached_fma_peak(devmap::active_cpu_path(), devmap::cpu::default_fma_peak_cache());
  };
  return devmap::worker_main(argc, argv, rt);
}
