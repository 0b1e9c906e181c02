#include "kernels/cuda/cuda_copy_queue.h"

#include <cassert>
#include <utility>

#include "kernels/cuda/cuda_check.h"

namespace devmap::cuda {
namespace {

cudaEvent_t new_event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags (offload copies)");
  return e;
}

}  // namespace

CudaCopyQueue::CudaCopyQueue(CudaDevice& device) : device_(device) {
  device_.ensure();
  check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (offload copy stream)");
  try {
    issued_ = new_event();
  } catch (...) {
    (void)cudaStreamDestroy(copy_);
    throw;
  }
}

CudaCopyQueue::~CudaCopyQueue() {
  (void)cudaStreamSynchronize(copy_);
  for (cudaEvent_t e : done_) (void)cudaEventDestroy(e);
  for (cudaEvent_t e : spare_) (void)cudaEventDestroy(e);
  if (issued_ != nullptr) (void)cudaEventDestroy(issued_);
  (void)cudaStreamDestroy(copy_);
}

uint64_t CudaCopyQueue::submit(Batch batch) {
  // After the compute stream's work so far (a cudaStreamWaitEvent takes the
  // event's latest record, so issued_ may be recorded again at once).
  check(cudaEventRecord(issued_, device_.stream()), "cudaEventRecord (offload copies)");
  check(cudaStreamWaitEvent(copy_, issued_, 0), "cudaStreamWaitEvent (offload copies)");
  const cudaMemcpyKind kind = batch.to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  for (const Copy& c : batch.copies)
    if (c.bytes > 0)
      check(cudaMemcpyAsync(c.dst, c.src, c.bytes, kind, copy_),
            batch.to_device ? "cudaMemcpyAsync (offload fetch)" : "cudaMemcpyAsync (offload write-back)");
  cudaEvent_t done = nullptr;
  if (spare_.empty()) {
    done = new_event();
  } else {
    done = spare_.back();
    spare_.pop_back();
  }
  const cudaError_t e = cudaEventRecord(done, copy_);
  if (e != cudaSuccess) {
    spare_.push_back(done);
    check(e, "cudaEventRecord (offload copies)");
  }
  done_.push_back(done);
  return ++submitted_;
}

cudaEvent_t CudaCopyQueue::done_event(uint64_t ticket) const {
  assert(ticket > waited_ && ticket <= submitted_);
  return done_[static_cast<size_t>(ticket - waited_ - 1)];
}

void CudaCopyQueue::order(uint64_t ticket) {
  if (ticket <= waited_ || ticket <= ordered_) return;  // done, or the compute stream already waits for it
  check(cudaStreamWaitEvent(device_.stream(), done_event(ticket), 0), "cudaStreamWaitEvent (offload fetch)");
  ordered_ = ticket;
}

void CudaCopyQueue::wait(uint64_t ticket) {
  if (ticket <= waited_) return;
  check(cudaEventSynchronize(done_event(ticket)), "cudaEventSynchronize (offload copies)");
  // The copy stream is in order: every batch up to `ticket` is done.
  for (; waited_ < ticket; ++waited_) {
    spare_.push_back(done_.front());
    done_.pop_front();
  }
}

}  // namespace devmap::cuda
