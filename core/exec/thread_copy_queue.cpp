#include "core/exec/thread_copy_queue.h"

#include <utility>

namespace devmap {

ThreadCopyQueue::ThreadCopyQueue(DeviceMemory& memory) : memory_(memory), thread_([this] { loop(); }) {}

ThreadCopyQueue::~ThreadCopyQueue() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

uint64_t ThreadCopyQueue::submit(Batch batch) {
  uint64_t ticket = 0;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(batch));
    ticket = ++submitted_;
  }
  work_.notify_one();
  return ticket;
}

void ThreadCopyQueue::wait(uint64_t ticket) {
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return finished_ >= ticket; });
}

uint64_t ThreadCopyQueue::submitted() const {
  std::lock_guard lock(mu_);
  return submitted_;
}

void ThreadCopyQueue::take_events(std::vector<TraceEvent>& out) {
  std::lock_guard lock(mu_);
  out.insert(out.end(), events_.begin(), events_.end());
  events_.clear();
}

void ThreadCopyQueue::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and nothing left to copy
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const int64_t start = batch.traced ? trace_now_ns() : 0;
    for (const Copy& c : batch.copies) {
      if (batch.to_device)
        memory_.copy_from_host(c.dst, c.src, c.bytes);
      else
        memory_.copy_to_host(c.dst, c.src, c.bytes);
    }
    const int64_t end = batch.traced ? trace_now_ns() : 0;
    lock.lock();
    if (batch.traced) {
      batch.event.start_ns = start;
      batch.event.end_ns = end;
      events_.push_back(batch.event);
    }
    ++finished_;
    done_.notify_all();
  }
}

}  // namespace devmap
