// gpu_copy_bench: host <-> device copy bandwidth through POSIX shared memory
// (what a GPU worker's slots are) pinned with cudaHostRegister, against the
// same memory left pageable, for a few transfer sizes.
//
//   gpu_copy_bench [--device gpu:N] [--seconds S]
//
// One line per (direction, memory, size): "h2d pinned 1.53 MiB: 21.4 GB/s".
// Exits 3 when there is no usable GPU.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/probe.h"

namespace {

using devmap::cuda::check;

// A mapping of a fresh POSIX shared-memory object (unlinked at once).
class ShmBuffer {
 public:
  explicit ShmBuffer(size_t bytes) : bytes_(bytes) {
    const std::string name = "/devmap-copy-bench-" + std::to_string(::getpid());
    int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) devmap::throw_runtime("shm_open " + name + ": " + std::strerror(errno));
    ::shm_unlink(name.c_str());
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      ::close(fd);
      devmap::throw_runtime("ftruncate: " + std::string(std::strerror(errno)));
    }
    data_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (data_ == MAP_FAILED) devmap::throw_runtime("mmap: " + std::string(std::strerror(errno)));
    std::memset(data_, 1, bytes);
  }
  ~ShmBuffer() { ::munmap(data_, bytes_); }
  void* data() const { return data_; }

 private:
  size_t bytes_;
  void* data_ = nullptr;
};

// GB/s of repeated copies of `bytes` for about `seconds` (after a warm-up).
double bandwidth(void* host, void* device, size_t bytes, bool to_device, cudaStream_t stream, double seconds) {
  auto copy = [&] {
    if (to_device)
      check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    else
      check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  };
  for (int i = 0; i < 3; ++i) copy();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  int64_t copies = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0.0;
  while (elapsed < seconds) {
    for (int i = 0; i < 8; ++i) copy();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    copies += 8;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return static_cast<double>(bytes) * static_cast<double>(copies) / elapsed / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "gpu:0";
  double seconds = 0.25;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--device") == 0) device_name = argv[i + 1];
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
  }
  try {
    devmap::cuda::CudaDevice device(devmap::cuda::parse_gpu_ordinal(device_name));
    const devmap::cuda::GpuProbe probe = devmap::cuda::probe_gpu(device.ordinal());
    if (!probe.usable) {
      std::cout << "no usable GPU: " << probe.reason << "\n";
      return 3;
    }
    cudaStream_t stream = device.stream();
    // An edge slot of the reference model (64 x 32x14x14 floats), a batch of
    // its input images (256 x 28x28), and a large transfer.
    const std::vector<size_t> sizes = {size_t{256} * 784 * 4, size_t{64} * 32 * 14 * 14 * 4, size_t{64} << 20};
    const size_t largest = sizes.back();
    ShmBuffer host(largest);
    void* dev = nullptr;
    check(cudaMalloc(&dev, largest), "cudaMalloc");
    std::printf("device: %s\n", probe.name.c_str());
    for (bool pinned : {false, true}) {
      if (pinned) check(cudaHostRegister(host.data(), largest, cudaHostRegisterPortable), "cudaHostRegister");
      for (size_t bytes : sizes)
        for (bool to_device : {true, false}) {
          const double gbs = bandwidth(host.data(), dev, bytes, to_device, stream, seconds);
          std::printf("%s %s %s: %.2f GB/s\n", to_device ? "h2d" : "d2h", pinned ? "pinned  " : "pageable",
                      devmap::format_bytes(bytes).c_str(), gbs);
          std::fflush(stdout);
        }
      if (pinned) check(cudaHostUnregister(host.data()), "cudaHostUnregister");
    }
    check(cudaFree(dev), "cudaFree");
    return 0;
  } catch (const devmap::Error& e) {
    std::cerr << "gpu_copy_bench: " << e.what() << "\n";
    return 1;
  }
}
