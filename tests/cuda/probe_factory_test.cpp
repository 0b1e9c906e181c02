// probe_gpu, `worker_gpu --probe` and the CUDA kernel factory's op list.
// These run everywhere: without a GPU they check that the absence reads as
// "no usable GPU" with its reason.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/base/error.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/run_process.h"

namespace devmap::test {
namespace {

TEST(ProbeGpu, GivesAReasonOrADevice) {
  const cuda::GpuProbe& p = gpu_probe();
  EXPECT_GT(p.cudnn_version, 0u);   // libcudnn answers without a GPU
  EXPECT_GT(p.runtime_version, 0);  // so does the (static) runtime
  EXPECT_NE(p.built_architectures, "");
  if (p.usable) {
    EXPECT_TRUE(p.reason.empty());
    EXPECT_GE(p.device_count, 1);
    EXPECT_FALSE(p.name.empty());
    EXPECT_GT(p.total_bytes, 0u);
    EXPECT_GT(p.driver_version, 0);
  } else {
    EXPECT_FALSE(p.reason.empty());
    EXPECT_NE(p.describe().find("no usable GPU: " + p.reason), std::string::npos) << p.describe();
  }
}

// The probe's library checks need no device: cuDNN's sub-libraries load
// and match it, and it was built for this build's CUDA major version.
TEST(ProbeGpu, CudaLibrariesFitTheBuild) {
  EXPECT_EQ(cuda::cuda_library_problem(), "");
  const cuda::GpuProbe& p = gpu_probe();
  EXPECT_EQ(p.library_problem, "");
  EXPECT_GT(p.cudnn_cudart_version, 0u);
  EXPECT_NE(p.describe().find("cuDNN libraries: ops and convolution sub-libraries load and match"), std::string::npos)
      << p.describe();
  if (p.usable) {
    EXPECT_GT(p.conv_algorithms, 0);
    EXPECT_NE(p.describe().find("handles: cuDNN and cuBLAS created and destroyed"), std::string::npos);
  }
}

TEST(ProbeGpu, VersionMismatchesAreNotUsable) {
  EXPECT_EQ(cuda::cuda_version_problem(91900, 91900, 13010, 13000), "");
  EXPECT_EQ(cuda::cuda_version_problem(90100, 91900, 13000, 13020), "");  // minor versions may differ
  EXPECT_EQ(cuda::cuda_version_problem(80907, 91900, 12020, 13000),
            "cuDNN 8.9.7 is loaded; this build needs cuDNN 9 (libcudnn.so.9)");
  const std::string cudart = cuda::cuda_version_problem(91900, 91900, 12090, 13000);
  EXPECT_NE(cudart.find("is built for CUDA 12.9, this build runs CUDA 13.0"), std::string::npos) << cudart;
  EXPECT_NE(cudart.find("nvidia-cudnn-cu13"), std::string::npos) << cudart;
}

// The reasons cudaGetDeviceCount's answer gives, as pure functions of the
// error, the count and the driver's and runtime's versions.
TEST(ProbeGpu, NoDriverReadsAsNoDriverWhateverTheError) {
  for (const cudaError_t e : {cudaErrorInsufficientDriver, cudaErrorNoDevice, cudaSuccess}) {
    const std::string r = cuda::device_count_problem(e, 0, 0, 13000);
    EXPECT_EQ(r.rfind("no NVIDIA driver: the CUDA driver library libcuda.so.1 is not loaded on this machine", 0), 0u)
        << r;
    EXPECT_NE(r.find("install the NVIDIA driver"), std::string::npos) << r;
  }
  EXPECT_NE(cuda::device_count_problem(cudaErrorInsufficientDriver, 0, 0, 13000).find("(cudaErrorInsufficientDriver)"),
            std::string::npos);
}

TEST(ProbeGpu, ADriverTooOldForTheRuntimeSaysBothVersions) {
  const std::string r = cuda::device_count_problem(cudaErrorInsufficientDriver, 0, 12020, 13000);
  EXPECT_EQ(r.rfind("the NVIDIA driver supports CUDA 12.2, this build needs CUDA 13.0 (", 0), 0u) << r;
  EXPECT_NE(r.find("update the driver"), std::string::npos) << r;
}

TEST(ProbeGpu, ADriverWithoutADeviceReadsAsNoDevice) {
  for (const cudaError_t e : {cudaErrorNoDevice, cudaSuccess}) {
    const std::string r = cuda::device_count_problem(e, 0, 13000, 13000);
    EXPECT_EQ(r.rfind("no CUDA device: the NVIDIA driver (CUDA 13.0) is loaded but sees no device", 0), 0u) << r;
    EXPECT_NE(r.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << r;
  }
  EXPECT_NE(cuda::device_count_problem(cudaErrorNoDevice, 0, 13000, 13000).find("(cudaErrorNoDevice)"),
            std::string::npos);
}

TEST(ProbeGpu, OtherDeviceCountErrorsAreNamed) {
  EXPECT_EQ(cuda::device_count_problem(cudaSuccess, 2, 13000, 13000), "");
  const std::string r = cuda::device_count_problem(cudaErrorOperatingSystem, 0, 13000, 13000);
  EXPECT_EQ(r.rfind("cudaGetDeviceCount failed: ", 0), 0u) << r;
  EXPECT_NE(r.find("cudaErrorOperatingSystem"), std::string::npos) << r;
}

// Where this machine has a driver but no device, the probe says so.
TEST(ProbeGpu, ADriverWithoutADeviceHereSaysNoDevice) {
  const cuda::GpuProbe& p = gpu_probe();
  if (p.driver_version == 0) GTEST_SKIP() << "no NVIDIA driver here (" << p.reason << ")";
  if (p.device_count > 0) GTEST_SKIP() << "a CUDA device is visible here";
  EXPECT_EQ(p.reason.rfind("no CUDA device: ", 0), 0u) << p.reason;
}

TEST(ProbeGpu, MissingOrdinalIsNotUsable) {
  const cuda::GpuProbe p = cuda::probe_gpu(999);
  EXPECT_FALSE(p.usable);
  EXPECT_FALSE(p.reason.empty());
}

TEST(ProbeGpu, VersionStrings) {
  EXPECT_EQ(cuda::cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda::cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda::cuda_version_string(0), "none");
  EXPECT_EQ(cuda::version_triple(91900), "9.19.0");
}

TEST(WorkerGpuProbe, ExitStatusSaysWhetherThereIsAUsableGpu) {
  testing::TempDir dir;
  const testing::ProcessResult r = testing::run_process({bin_dir() + "/worker_gpu", "--probe"}, dir.path());
  if (gpu_probe().usable) {
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(gpu_probe().name), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.out.find("no usable GPU"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("cuDNN: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuDNN libraries: ops and convolution sub-libraries load and match"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("CUDA driver: "), std::string::npos) << r.out;
}

// On a machine without an NVIDIA driver, `worker_gpu --probe` says that,
// not something about the build.
TEST(WorkerGpuProbe, WithoutADriverPrintsTheNoDriverReason) {
  if (gpu_probe().driver_version != 0) GTEST_SKIP() << "an NVIDIA driver is loaded here";
  testing::TempDir dir;
  const testing::ProcessResult r = testing::run_process({bin_dir() + "/worker_gpu", "--probe"}, dir.path());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("no usable GPU: no NVIDIA driver: the CUDA driver library libcuda.so.1 is not loaded", 0), 0u)
      << r.out;
}

TEST(WorkerGpuProbe, BadDeviceNameIsAUsageError) {
  testing::TempDir dir;
  const testing::ProcessResult r =
      testing::run_process({bin_dir() + "/worker_gpu", "--probe", "--device", "tpu:0"}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("gpu:N"), std::string::npos) << r.err;
}

// The registry's device_kinds, which placement asks, agree with the
// factory: every op a schema says runs on gpu devices has a kernel here,
// and no other.
TEST(CudaKernelFactory, SupportsExactlyTheOpsTheSchemasPlaceOnGpus) {
  std::vector<std::string> gpu_ops;
  for (const std::string& op : known_op_names()) {
    const OpSchema* schema = find_op(op);
    const bool fed = schema->fed_by_coordinator();
    if (!fed && schema->runs_on(DeviceKind::kGpu)) gpu_ops.push_back(op);
    EXPECT_EQ(cuda::CudaKernelFactory::supports(op), !fed && schema->runs_on(DeviceKind::kGpu)) << op;
  }
  EXPECT_EQ(cuda::CudaKernelFactory::op_names(), gpu_ops);
}

TEST(CudaKernelFactory, MakesKernelsWithoutTouchingTheGpu) {
  // Creating kernels and optimizers must work on a machine without a GPU
  // (the worker reports device errors from inside its loop).
  cuda::CudaKernelFactory factory(std::make_shared<cuda::CudaDevice>(0));
  for (const std::string& op : cuda::CudaKernelFactory::op_names()) EXPECT_NE(factory.make_kernel(op), nullptr) << op;
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kAdam;
  EXPECT_EQ(factory.make_optimizer(c)->state_count(), 2);
}

TEST(CudaKernelFactory, UnknownOpNamesTheKnownOnes) {
  cuda::CudaKernelFactory factory(std::make_shared<cuda::CudaDevice>(0));
  try {
    factory.make_kernel("conv3x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    std::string known;
    for (const std::string& op : cuda::CudaKernelFactory::op_names()) known += (known.empty() ? "" : ", ") + op;
    EXPECT_EQ(std::string(e.what()), "no gpu kernel for op 'conv3x' (known: " + known + ")");
  }
  EXPECT_THROW(factory.make_kernel("input"), Error);
}

TEST(CudaDevice, WithoutAGpuSaysSoWhenUsed) {
  if (gpu_probe().usable) GTEST_SKIP() << "a GPU is usable here";
  cuda::CudaDevice device(0);
  try {
    device.stream();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu:0: no usable GPU: "), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, ParsesOrdinals) {
  EXPECT_EQ(cuda::parse_gpu_ordinal("gpu:0"), 0);
  EXPECT_EQ(cuda::parse_gpu_ordinal("gpu:12"), 12);
  EXPECT_THROW(cuda::parse_gpu_ordinal("cpu:0"), Error);
  EXPECT_THROW(cuda::parse_gpu_ordinal("gpu:"), Error);
  EXPECT_THROW(cuda::parse_gpu_ordinal("gpu:1x"), Error);
}

}  // namespace
}  // namespace devmap::test
