// Why a GPU is not usable, as the coordinator tells it: a build without
// worker_gpu gives the reason CMake recorded when it configured the build,
// and a worker_gpu that cannot start names the library it lacks. The
// probe's own reasons (no driver, no device, cuDNN) are tested in
// tests/cuda/probe_factory_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "coordinator/config/run_options.h"
#include "coordinator/plan/gpu_placement.h"
#include "tests/coordinator/temp_dir.h"

namespace devmap {
namespace {

const std::string kNoNvcc = "CMake found no CUDA compiler (nvcc): install the CUDA toolkit, or set CMAKE_CUDA_COMPILER";

RunOptions in_dir(const test::TempDir& dir) {
  RunOptions options;
  options.worker_dir = dir.file("");
  return options;
}

// A worker_gpu that prints `output` and exits with `status`.
void fake_worker_gpu(const test::TempDir& dir, const std::string& output, int status) {
  const std::string path =
      dir.write("worker_gpu", "#!/bin/sh\nprintf '%s\\n' '" + output + "' >&2\nexit " + std::to_string(status) + "\n");
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
}

TEST(GpuProbeReason, WithoutWorkerGpuTheReasonRecordedAtConfigureTimeIsGiven) {
  test::TempDir dir;
  dir.write("worker_gpu.absent", kNoNvcc + "\n");
  const GpuProbe p = probe_gpu_device(in_dir(dir), "gpu:0");
  EXPECT_FALSE(p.usable);
  EXPECT_EQ(p.text, "no usable GPU: this build has no worker_gpu: " + kNoNvcc);
}

TEST(GpuProbeReason, WithoutWorkerGpuOrARecordTheFolderIsNamed) {
  test::TempDir dir;
  const GpuProbe p = probe_gpu_device(in_dir(dir), "gpu:0");
  EXPECT_FALSE(p.usable);
  EXPECT_EQ(p.text, "no usable GPU: there is no worker_gpu in " + dir.file("") +
                        " (build the target worker_gpu there, or set DEVMAP_WORKER_DIR to a folder that has it)");
}

// The build this test belongs to says why it has no worker_gpu, or has one.
TEST(GpuProbeReason, TheBuildRecordsWhyItHasNoWorkerGpu) {
  const std::filesystem::path bin = std::filesystem::path(DEVMAP_COORDINATOR_BIN).parent_path();
  const bool absent = std::filesystem::exists(bin / "worker_gpu.absent");
  EXPECT_NE(absent, std::filesystem::exists(bin / "worker_gpu")) << bin;
  if (absent) {
    EXPECT_GT(std::filesystem::file_size(bin / "worker_gpu.absent"), 1u);
  }
}

TEST(GpuProbeReason, AWorkerGpuTheLoaderCannotStartNamesTheMissingLibrary) {
  test::TempDir dir;
  fake_worker_gpu(dir,
                  "worker_gpu: error while loading shared libraries: libcudnn.so.9: cannot open shared object file: "
                  "No such file or directory",
                  127);
  const GpuProbe p = probe_gpu_device(in_dir(dir), "gpu:0");
  EXPECT_FALSE(p.usable);
  EXPECT_EQ(p.text, "no usable GPU: " + dir.file("worker_gpu") +
                        " cannot start: cuDNN's library libcudnn.so.9 is missing or unreadable (install it, or add "
                        "its folder to LD_LIBRARY_PATH)");
}

// A probe that hangs (a wedged driver) is stopped at its time bound, and the
// reason says so.
TEST(GpuProbeReason, AProbeThatGivesNoAnswerIsStoppedAndSaysWhy) {
  test::TempDir dir;
  const std::string path = dir.write("worker_gpu", "#!/bin/sh\nexec sleep 30\n");
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  const auto start = std::chrono::steady_clock::now();
  const GpuProbe p = probe_gpu_device(in_dir(dir), "gpu:0", 1.0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(p.usable);
  EXPECT_EQ(p.text, "no usable GPU: " + path +
                        " --probe gave no answer in 1 s and was stopped: the driver or the device does not respond "
                        "(nvidia-smi shows their state)");
  EXPECT_GT(kGpuProbeSeconds, 0.0);
}

TEST(GpuProbeReason, ProbeFailuresNameTheLibraryOrTheStatus) {
  EXPECT_NE(probe_failure_reason("wg", 127,
                                 "wg: error while loading shared libraries: libcublas.so.13: cannot open shared "
                                 "object file: No such file or directory")
                .find("wg cannot start: cuBLAS's library libcublas.so.13 (CUDA toolkit) is missing"),
            std::string::npos);
  EXPECT_EQ(probe_failure_reason("wg", 139, "Segmentation fault"),
            "no usable GPU: wg --probe failed (status 139): Segmentation fault");
}

TEST(GpuProbeReason, TheProbesOwnReasonPassesThrough) {
  test::TempDir dir;
  fake_worker_gpu(dir, "no usable GPU: no CUDA device: the NVIDIA driver (CUDA 13.0) is loaded but sees no device", 3);
  const GpuProbe p = probe_gpu_device(in_dir(dir), "gpu:0");
  EXPECT_FALSE(p.usable);
  EXPECT_EQ(p.text, "no usable GPU: no CUDA device: the NVIDIA driver (CUDA 13.0) is loaded but sees no device");
}

}  // namespace
}  // namespace devmap
