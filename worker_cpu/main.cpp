// worker_cpu: a worker process whose kernels run on the CPU (OpenBLAS).
#include <cblas.h>

#include <string>

#include "kernels/cpu/cpu_kernel_factory.h"
#include "worker/worker_service.h"

int main(int argc, char** argv) {
  devmap::CpuKernelFactory kernels;
  devmap::WorkerRuntime rt;
  rt.program = "worker_cpu";
  rt.device_kind = "cpu";
  rt.kernels = &kernels;
  rt.set_threads = [](int threads) { devmap::set_cpu_threads(threads); };
  rt.describe = [] { return std::string(openblas_get_config()) + " core " + openblas_get_corename(); };
  return devmap::worker_main(argc, argv, rt);
}
