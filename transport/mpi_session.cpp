#include "transport/mpi_session.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/base/error.h"

namespace devmap {
namespace {

constexpr size_t kMaxChunk = size_t{1} << 30;  // floats per MPI call (counts are int)

void check_tag(int tag) {
  if (tag < 0 || tag >= kMaxTag)
    throw_runtime("MPI: tag " + std::to_string(tag) + " is outside [0, " + std::to_string(kMaxTag) + ")");
}

std::string shape_of(const std::vector<int64_t>& dims) {
  return Shape(dims).to_string();
}

}  // namespace

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw_runtime(std::string("MPI: ") + what + " failed: " + std::string(text, static_cast<size_t>(len)));
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized || finalized) throw_runtime("MPI: a process can hold one MpiSession, once");
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  check_mpi(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
  host_.assign(name, static_cast<size_t>(len));
}

MpiSession::~MpiSession() {
  MPI_Finalize();
}

void MpiSession::send_tensor(const TensorView& t, int dest, int tag) const {
  check_tag(tag);
  std::vector<int64_t> header{t.shape.rank()};
  header.insert(header.end(), t.shape.dims().begin(), t.shape.dims().end());
  check_mpi(MPI_Send(header.data(), static_cast<int>(header.size()), MPI_INT64_T, dest, tag, MPI_COMM_WORLD),
            "MPI_Send (tensor shape)");
  size_t n = static_cast<size_t>(t.numel());
  for (size_t at = 0; at < n; at += kMaxChunk) {
    int count = static_cast<int>(std::min(kMaxChunk, n - at));
    check_mpi(MPI_Send(t.data + at, count, MPI_FLOAT, dest, tag, MPI_COMM_WORLD), "MPI_Send (tensor bytes)");
  }
}

void MpiSession::recv_tensor(const TensorView& t, int source, int tag) const {
  check_tag(tag);
  MPI_Status status;
  check_mpi(MPI_Probe(source, tag, MPI_COMM_WORLD, &status), "MPI_Probe (tensor shape)");
  int words = 0;
  MPI_Get_count(&status, MPI_INT64_T, &words);
  std::vector<int64_t> header(static_cast<size_t>(std::max(words, 1)));
  check_mpi(MPI_Recv(header.data(), words, MPI_INT64_T, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv (tensor shape)");
  std::vector<int64_t> dims(header.begin() + 1, header.end());
  if (words < 1 || header[0] != static_cast<int64_t>(dims.size()) || Shape(dims) != t.shape)
    throw_runtime("MPI: rank " + std::to_string(source) + " sent a tensor of shape " + shape_of(dims) + " (tag " +
                  std::to_string(tag) + ") where rank " + std::to_string(rank_) + " expects " + t.shape.to_string());
  size_t n = static_cast<size_t>(t.numel());
  for (size_t at = 0; at < n; at += kMaxChunk) {
    int count = static_cast<int>(std::min(kMaxChunk, n - at));
    check_mpi(MPI_Recv(t.data + at, count, MPI_FLOAT, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv (tensor bytes)");
  }
}

namespace {

// Rank r owns elements [offset[r], offset[r] + count[r]) of the buffer. The
// reduce-scatter: every rank sends each other rank its slice of that rank's
// elements and receives its own slice from each; the owner adds the slices
// in rank order. The all-gather: the owner sends its summed slice to every
// other rank and receives theirs into place. Two ranks instead swap their
// whole buffers and each adds: the same bytes in one round, and x0 + x1 has
// the same bits as x1 + x0.
class OrderedSum final : public MpiSession::PendingSum {
 public:
  // A sum takes a scratch buffer from `scratch.spare` and gives it back
  // when it is done, so a step's sums allocate nothing.
  OrderedSum(float* data, size_t count, int rank, int size, int tag, MpiSession::SumScratch& scratch)
      : data_(data), rank_(rank), tag_(tag), spare_(scratch.spare), abandoned_(scratch.abandoned) {
    const size_t n = static_cast<size_t>(size);
    counts_.resize(n);
    offsets_.resize(n);
    for (size_t r = 0, at = 0; r < n; ++r) {
      counts_[r] = count / n + (r < count % n ? 1 : 0);
      offsets_[r] = at;
      at += counts_[r];
    }
    mine_ = counts_[static_cast<size_t>(rank)];
    if (!spare_.empty()) {
      slices_ = std::move(spare_.back());
      spare_.pop_back();
    }
    if (swaps()) {
      slices_.resize(count);
      receive(slices_.data(), count, 1 - rank, tag_);
      send(data_, count, 1 - rank, tag_);
      return;
    }
    slices_.resize(mine_ * n);
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      receive(slices_.data() + static_cast<size_t>(r) * mine_, mine_, r, tag_);
      send(data_ + offsets_[static_cast<size_t>(r)], counts_[static_cast<size_t>(r)], r, tag_);
    }
  }

  ~OrderedSum() override {
    if (phase_ == 2) {
      spare_.push_back(std::move(slices_));
      return;
    }
    for (MPI_Request& r : requests_)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    abandoned_.push_back(std::move(slices_));  // MPI may still write there: kept until the session ends
  }

  bool test() override {
    while (phase_ < 2) {
      int done = 1;
      if (!requests_.empty())
        check_mpi(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE),
                  "MPI_Testall (sum in rank order)");
      if (!done) return false;
      requests_.clear();
      if (phase_++ != 0) continue;
      if (!swaps()) {
        gather();
        continue;
      }
      for (size_t i = 0; i < slices_.size(); ++i) data_[i] += slices_[i];
      phase_ = 2;
    }
    return true;
  }

 private:
  bool swaps() const { return counts_.size() == 2; }  // two ranks swap their whole buffers
  void send(const float* p, size_t count, int rank, int tag) {
    check_mpi(MPI_Isend(p, static_cast<int>(count), MPI_FLOAT, rank, tag, MPI_COMM_WORLD, &requests_.emplace_back()),
              "MPI_Isend (sum in rank order)");
  }
  void receive(float* p, size_t count, int rank, int tag) {
    check_mpi(MPI_Irecv(p, static_cast<int>(count), MPI_FLOAT, rank, tag, MPI_COMM_WORLD, &requests_.emplace_back()),
              "MPI_Irecv (sum in rank order)");
  }

  // Every slice is in: the owner's sum in rank order, then the all-gather.
  void gather() {
    const size_t n = counts_.size(), me = static_cast<size_t>(rank_);
    float* out = data_ + offsets_[me];  // this rank's slice, to hold the sum
    if (me != 0) {
      std::memcpy(slices_.data() + me * mine_, out, mine_ * sizeof(float));
      std::memcpy(out, slices_.data(), mine_ * sizeof(float));
    }
    for (size_t r = 1; r < n; ++r) {
      const float* s = slices_.data() + r * mine_;
      for (size_t i = 0; i < mine_; ++i) out[i] += s[i];
    }
    for (size_t r = 0; r < n; ++r) {
      if (r == me) continue;
      receive(data_ + offsets_[r], counts_[r], static_cast<int>(r), tag_ + 1);
      send(out, mine_, static_cast<int>(r), tag_ + 1);
    }
  }

  float* data_;
  int rank_, tag_;
  std::vector<size_t> counts_, offsets_;
  size_t mine_ = 0;
  std::vector<std::vector<float>>&spare_, &abandoned_;
  std::vector<float> slices_;  // rank r's slice of this rank's elements at r * mine_ (r = 0: unused on rank 0)
  std::vector<MPI_Request> requests_;
  int phase_ = 0;  // 0: reduce-scatter (or the swap), 1: all-gather, 2: done
};

class DoneSum final : public MpiSession::PendingSum {
 public:
  bool test() override { return true; }
};

}  // namespace

std::unique_ptr<MpiSession::PendingSum> MpiSession::start_sum_ordered(float* data, size_t count) const {
  if (size_ == 1 || count == 0) return std::make_unique<DoneSum>();
  const size_t largest_message = size_ == 2 ? count : count / static_cast<size_t>(size_) + 1;  // OrderedSum's
  if (largest_message > static_cast<size_t>(INT_MAX))
    throw_runtime("MPI: a sum of " + std::to_string(count) + " floats over " + std::to_string(size_) +
                  " ranks is too large for one call; split it into buckets");
  // Two tags per sum (one per phase), in turn: sums are matched by the order
  // in which the ranks start them, and MPI keeps the order of messages
  // between two ranks with the same tag.
  const int tag = kSumTagBase + static_cast<int>(sums_started_++ % (kSumTags / 2)) * 2;
  return std::make_unique<OrderedSum>(data, count, rank_, size_, tag, sum_scratch_);
}

void MpiSession::allreduce_sum_ordered(float* data, size_t count) const {
  for (auto sum = start_sum_ordered(data, count); !sum->test();) {
  }
}

std::vector<std::string> MpiSession::allgather(const std::string& mine) const {
  return allgather_while(mine, {});
}

std::vector<std::string> MpiSession::allgather_while(const std::string& mine, const std::function<void()>& pump) const {
  if (mine.size() > static_cast<size_t>(INT_MAX)) throw_runtime("MPI: allgather of a string over 2 GiB");
  auto wait = [&](MPI_Request& request, const char* what) {
    for (int done = 0;;) {
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (pump) pump();
    }
  };
  const size_t n = static_cast<size_t>(size_);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(n), offsets(n);
  MPI_Request request;
  check_mpi(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD, &request),
            "MPI_Iallgather (lengths)");
  wait(request, "MPI_Test (allgather lengths)");
  size_t total = 0;
  for (size_t r = 0; r < n; ++r) {
    offsets[r] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[r]);
    if (total > static_cast<size_t>(INT_MAX)) throw_runtime("MPI: allgather of strings over 2 GiB in all");
  }
  std::string all(total, '\0');
  check_mpi(MPI_Iallgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                            MPI_COMM_WORLD, &request),
            "MPI_Iallgatherv (strings)");
  wait(request, "MPI_Test (allgather strings)");
  std::vector<std::string> out(n);
  for (size_t r = 0; r < n; ++r) out[r] = all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r]));
  return out;
}

void MpiSession::send_bytes(const void* data, size_t bytes, int dest, int tag) const {
  check_tag(tag);
  const char* p = static_cast<const char*>(data);
  for (size_t at = 0; at < bytes || at == 0; at += kMaxChunk) {
    int count = static_cast<int>(std::min(kMaxChunk, bytes - at));
    check_mpi(MPI_Send(p + at, count, MPI_BYTE, dest, tag, MPI_COMM_WORLD), "MPI_Send (bytes)");
    if (bytes == 0) break;
  }
}

void MpiSession::recv_bytes(void* data, size_t bytes, int source, int tag) const {
  check_tag(tag);
  char* p = static_cast<char*>(data);
  for (size_t at = 0; at < bytes || at == 0; at += kMaxChunk) {
    const int count = static_cast<int>(std::min(kMaxChunk, bytes - at));
    MPI_Status status;
    check_mpi(MPI_Recv(p + at, count, MPI_BYTE, source, tag, MPI_COMM_WORLD, &status), "MPI_Recv (bytes)");
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (got != count)
      throw_runtime("MPI: rank " + std::to_string(source) + " sent " + std::to_string(got) + " bytes (tag " +
                    std::to_string(tag) + ") where rank " + std::to_string(rank_) + " expects " +
                    std::to_string(count));
    if (bytes == 0) break;
  }
}

int MpiSession::broadcast_sleeping(int value, int root) const {
  MPI_Request request;
  check_mpi(MPI_Ibcast(&value, 1, MPI_INT, root, MPI_COMM_WORLD, &request), "MPI_Ibcast");
  for (int done = 0;;) {
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (broadcast)");
    if (done) return value;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void MpiSession::abort(int exit_code) const {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; if it did, the job must still end
}

void MpiSession::barrier() const {
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

}  // namespace devmap
