// The program every rank of the multi-host tests runs under mpirun
// (tests/multihost/mpi_session_test.cpp launches it on the test bed):
//
//   mpi_session_ranks tensor COUNT      rank 0 sends a [COUNT] tensor to rank 1, which checks every element
//   mpi_session_ranks mismatch          rank 0 sends a [2,3] tensor, rank 1 expects [3,2]: prints the error
//   mpi_session_ranks allreduce COUNT   every rank reduces allreduce_data.h's contributions, prints the digest:
//                                       as three sums in flight at once, tested in turn, as training's buckets are
//
// Every rank prints "rank R of S on HOST" and its results to stdout, one
// line each; exit 1 with the error on stderr when MPI fails.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "tests/multihost/allreduce_data.h"
#include "transport/mpi_session.h"

using devmap::MpiSession;
using devmap::Shape;
using devmap::TensorView;
namespace t = devmap::testing;

namespace {

void tensor(const MpiSession& mpi, size_t count) {
  std::vector<float> data(count);
  TensorView view{data.data(), Shape{static_cast<int64_t>(count)}};
  if (mpi.rank() == 0) {
    for (size_t i = 0; i < count; ++i) data[i] = t::tensor_element(i);
    mpi.send_tensor(view, 1, 7);
  } else if (mpi.rank() == 1) {
    mpi.recv_tensor(view, 0, 7);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += data[i] != t::tensor_element(i);
    std::printf("rank 1 received %zu bytes, %zu elements wrong\n", view.nbytes(), wrong);
  }
}

void mismatch(const MpiSession& mpi) {
  std::vector<float> data(6, 1.0f);
  if (mpi.rank() == 0) {
    mpi.send_tensor(TensorView{data.data(), Shape{2, 3}}, 1, 8);
  } else if (mpi.rank() == 1) {
    try {
      mpi.recv_tensor(TensorView{data.data(), Shape{3, 2}}, 0, 8);
      std::printf("rank 1 accepted a tensor of the wrong shape\n");
    } catch (const devmap::Error& e) {
      std::printf("rank 1 refused: %s\n", e.what());
    }
  }
}

void allreduce(const MpiSession& mpi, size_t count) {
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = t::contribution(mpi.rank(), i);
  // Three buckets (the last takes the rest), all started before any is
  // tested, then tested in turn until each is done.
  std::vector<std::unique_ptr<MpiSession::PendingSum>> sums;
  for (size_t at = 0, k = 0; k < 3; ++k) {
    const size_t n = k < 2 ? count / 3 : count - at;
    sums.push_back(mpi.start_sum_ordered(data.data() + at, n));
    at += n;
  }
  for (bool pending = true; pending;) {
    pending = false;
    for (auto& sum : sums) pending = !sum->test() || pending;
  }
  std::printf("rank %d allreduce %zu floats digest %016" PRIx64 "\n", mpi.rank(), count,
              t::bits_digest(data.data(), count));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    MpiSession mpi(&argc, &argv);
    std::string mode = argc > 1 ? argv[1] : "";
    size_t count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
    std::printf("rank %d of %d on %s\n", mpi.rank(), mpi.size(), mpi.host().c_str());
    std::fflush(stdout);
    if (mode == "tensor" && mpi.size() >= 2) {
      tensor(mpi, count);
    } else if (mode == "mismatch" && mpi.size() >= 2) {
      mismatch(mpi);
    } else if (mode == "allreduce") {
      allreduce(mpi, count);
    } else {
      std::fprintf(
          stderr,
          "usage: mpi_session_ranks tensor COUNT | mismatch | allreduce COUNT (tensor and mismatch need 2 ranks)\n");
      return 2;
    }
    std::fflush(stdout);
    mpi.barrier();
    return 0;
  } catch (const devmap::Error& e) {
    std::fprintf(stderr, "mpi_session_ranks: %s\n", e.what());
    return 1;
  }
}
