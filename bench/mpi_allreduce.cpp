// The cost of reducing a gradient's worth of floats across the ranks of an
// MPI job: a bare MPI_Allreduce (MPI_SUM, one call) against devmap's
// MpiSession::allreduce_sum_ordered (rank-order sum, same bits every run)
// over the whole buffer, and against devmap's bucketed reduction (the same
// sum per bucket, the reference CNN's gradients cut as a data-parallel job
// cuts them: GradientExchange::buckets at data_parallel.bucket_size),
// alternating, each timed between barriers. Run under mpirun (see
// bench/mpi_allreduce.sh, which runs it across the namespace hosts):
//
//   mpi_allreduce [--floats N] [--rounds R] [--bucket-size BYTES]
//
// --floats other than the reference model's times no bucketed reduction.
// Rank 0 prints one line per method: the median and best seconds per call,
// and the median's algorithm and bus bandwidth as NCCL's tests define them
// for allreduce: algbw = bytes / time, busbw = algbw * 2 (n-1) / n.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coordinator/config/loader.h"
#include "coordinator/run/gradient_exchange.h"
#include "core/base/error.h"
#include "transport/mpi_session.h"

namespace {

// The trainable parameters of configs/fashion_mnist_cnn.yaml (conv1 832,
// conv2 51,264, fc1 3,212,288, logits 10,250): one step's gradients.
constexpr size_t kReferenceGradientFloats = 3274634;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    devmap::MpiSession mpi(&argc, &argv);
    size_t floats = kReferenceGradientFloats;
    int rounds = 20;
    const devmap::Config reference = devmap::load_config(DEVMAP_SOURCE_DIR "/configs/fashion_mnist_cnn.yaml");
    int64_t bucket_bytes = reference.data_parallel.bucket_size;
    for (int i = 1; i + 1 < argc; i += 2) {
      if (std::strcmp(argv[i], "--floats") == 0) {
        floats = std::strtoull(argv[i + 1], nullptr, 10);
      } else if (std::strcmp(argv[i], "--bucket-size") == 0) {
        bucket_bytes = std::atoll(argv[i + 1]);
      } else if (std::strcmp(argv[i], "--rounds") == 0) {
        rounds = std::atoi(argv[i + 1]);
      } else {
        if (mpi.rank() == 0) std::fprintf(stderr, "mpi_allreduce: unknown option '%s'\n", argv[i]);
        return 2;
      }
    }
    if (floats == 0 || rounds < 1 || bucket_bytes < 1) {
      if (mpi.rank() == 0) std::fprintf(stderr, "mpi_allreduce: --floats, --rounds and --bucket-size must be >= 1\n");
      return 2;
    }
    const auto entries = devmap::GradientExchange::layout(reference.graph);
    const auto buckets = devmap::GradientExchange::buckets(entries, bucket_bytes);
    if (entries.back().offset + entries.back().count != kReferenceGradientFloats)
      throw devmap::Error(devmap::ErrorKind::kRuntime, "the reference model's gradients are no longer " +
                                                           std::to_string(kReferenceGradientFloats) + " floats");
    const bool bucketed = floats == kReferenceGradientFloats;
    enum class Method { kBare, kOrdered, kBucketed };
    std::vector<float> data(floats);
    auto fill = [&] {
      for (size_t i = 0; i < floats; ++i) data[i] = static_cast<float>((i + static_cast<size_t>(mpi.rank())) % 97);
    };
    auto time_one = [&](Method method) {
      fill();
      mpi.barrier();
      const double t0 = MPI_Wtime();
      if (method == Method::kBare) {
        MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(floats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      } else if (method == Method::kOrdered) {
        mpi.allreduce_sum_ordered(data.data(), floats);
      } else {
        for (const auto& b : buckets) mpi.allreduce_sum_ordered(data.data() + b.offset, b.count);
      }
      double t = MPI_Wtime() - t0;
      // The slowest rank's time is the collective's.
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return t;
    };
    time_one(Method::kBare);  // warm-up: connections, buffers
    time_one(Method::kOrdered);
    std::vector<double> bare, ordered, in_buckets;
    for (int r = 0; r < rounds; ++r) {
      bare.push_back(time_one(Method::kBare));
      ordered.push_back(time_one(Method::kOrdered));
      if (bucketed) in_buckets.push_back(time_one(Method::kBucketed));
    }
    if (mpi.rank() == 0) {
      const double bytes = static_cast<double>(floats * sizeof(float));
      const double factor = 2.0 * (mpi.size() - 1) / mpi.size();
      std::printf("ranks %d (rank 0 on %s), %zu floats (%.2f MB), %d rounds alternating\n", mpi.size(),
                  mpi.host().c_str(), floats, bytes / 1e6, rounds);
      const std::string in_buckets_name = std::to_string(buckets.size()) + " buckets";
      for (auto [name, times] : {std::pair{"MPI_Allreduce", &bare}, std::pair{"allreduce_sum_ordered", &ordered},
                                 std::pair{in_buckets_name.c_str(), &in_buckets}}) {
        if (times->empty()) continue;
        const double m = median(*times);
        std::printf("%-22s median %.4f s  best %.4f s  algbw %.3f GB/s  busbw %.3f GB/s\n", name, m,
                    *std::min_element(times->begin(), times->end()), bytes / m / 1e9, bytes / m / 1e9 * factor);
      }
      if (bucketed)
        std::printf("bucketed / MPI_Allreduce: %.3f (bucket_size %lld bytes)\n", median(in_buckets) / median(bare),
                    static_cast<long long>(bucket_bytes));
    }
    return 0;
  } catch (const devmap::Error& e) {
    std::fprintf(stderr, "mpi_allreduce: %s\n", e.what());
    return 1;
  }
}
