#include "transport/mpi_session.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/error.h"

namespace devmap {
namespace {

constexpr int kMaxTag = 1 << 15;               // MPI guarantees MPI_TAG_UB >= 32767
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

void MpiSession::allreduce_sum_ordered(float* data, size_t count) const {
  if (size_ == 1 || count == 0) return;
  const size_t n = static_cast<size_t>(size_);
  if (count / n + 1 > static_cast<size_t>(INT_MAX) / n)
    throw_runtime("MPI: allreduce of " + std::to_string(count) + " floats over " + std::to_string(size_) +
                  " ranks is too large for one call; split it into buckets");
  if (size_ == 2) {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce (allreduce_sum_ordered)");
    return;
  }
  // Rank r owns elements [offset[r], offset[r] + counts[r]): it receives
  // that slice from every rank, adds the slices in rank order, and the
  // all-gather hands every rank every reduced slice.
  std::vector<int> counts(n), offsets(n);
  for (size_t r = 0, at = 0; r < n; ++r) {
    counts[r] = static_cast<int>(count / n + (r < count % n ? 1 : 0));
    offsets[r] = static_cast<int>(at);
    at += static_cast<size_t>(counts[r]);
  }
  const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(rank_)]);
  if (slices_.size() < mine * n) slices_.resize(mine * n);
  std::vector<float>& slices = slices_;
  std::vector<int> recv_counts(n, static_cast<int>(mine)), recv_offsets(n);
  for (size_t r = 0; r < n; ++r) recv_offsets[r] = static_cast<int>(r * mine);
  check_mpi(MPI_Alltoallv(data, counts.data(), offsets.data(), MPI_FLOAT, slices.data(), recv_counts.data(),
                          recv_offsets.data(), MPI_FLOAT, MPI_COMM_WORLD),
            "MPI_Alltoallv (allreduce_sum_ordered)");
  float* out = data + offsets[static_cast<size_t>(rank_)];
  for (size_t i = 0; i < mine; ++i) out[i] = slices[i];
  for (size_t r = 1; r < n; ++r) {
    const float* s = slices.data() + r * mine;
    for (size_t i = 0; i < mine; ++i) out[i] += s[i];
  }
  check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), offsets.data(), MPI_FLOAT,
                           MPI_COMM_WORLD),
            "MPI_Allgatherv (allreduce_sum_ordered)");
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
