// The processes of a job across hosts, and the checks they agree on before
// any worker starts.
//
// A job across hosts is started by an MPI launcher (mpirun, or Slurm's srun)
// with one coordinator process per host: each is an MPI rank, and rank 0
// drives the job. The workers are not ranks: each host's coordinator starts
// its own workers, as on one machine (docs/ARCHITECTURE.md, "Several hosts",
// says why). This header holds what the ranks tell each other at start-up
// and the pure rules that decide whether the job may start.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/run/gradient_exchange.h"
#include "coordinator/run/host_stages.h"

namespace devmap {

// Whether this process was started by an MPI launcher, read from the
// variables mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK) and srun (SLURM_PROCID,
// PMI_RANK) set. `getenv` is the lookup (std::getenv by default; tests pass
// their own).
bool started_by_mpi_launcher(const char* (*getenv)(const char*) = nullptr);

// What one rank reports about itself before the job starts.
struct RankFacts {
  std::string host;                    // as MPI names it (MPI_Get_processor_name)
  std::vector<std::string> addresses;  // its IPv4 addresses, so a config may name a host by address
  uint32_t protocol = 0;               // wire::kProtocolVersion of its binaries
  std::string build;                   // the devmap version it was built as
  std::string config_digest;           // key_hash of the config it resolved (after --set)

  // One line of text each way, for MPI to carry.
  std::string encode() const;
  static RankFacts decode(const std::string& text);
};

// This process's facts, for the host name MPI gave it.
RankFacts local_rank_facts(const std::string& host, const Config& config);

// Whether config host name `name` (a name or an IPv4 address) is the host
// `rank` reports: its name, its name's first label ("node1" for
// "node1.cluster"), or one of its addresses.
bool names_host(const std::string& name, const RankFacts& rank);

// Why the job must not start, or nothing. `ranks` are every rank's facts in
// rank order (one entry when no launcher started this process); `launched`
// says whether a launcher did. The checks, in order: every rank runs the
// same protocol and build as rank 0; every rank resolved the same config;
// one rank per host; the config's hosts, where it has a hosts section, are
// exactly the ranks' hosts (without one, the hosts are those the launcher
// gave); data_parallel.replicas, when above 1, is the number of ranks (one
// replica per host); no device is declared twice; devices on other hosts
// than rank 0's (pipeline stages across hosts) come without
// train.max_restarts. Each message names the ranks and hosts
// concerned and what to do.
std::optional<std::string> job_ranks_problem(const std::vector<RankFacts>& ranks, const Config& config, bool launched);

// The rank whose host runs each device of the config (a device without a
// host: rank 0's).
std::map<std::string, int> device_ranks(const std::vector<RankFacts>& ranks, const Config& config);

// This process's place in the job: rank 0 (or a process no launcher
// started) drives it; other ranks wait for its end. Holds the MPI session
// where the build has MPI and a launcher started this process.
class JobRanks {
 public:
  // Joins the job: with a launcher, initialises MPI, exchanges every rank's
  // facts and checks them (job_ranks_problem); without one, checks this
  // process's facts alone, so a config with hosts that needs a launcher
  // says so. Throws devmap::Error (kInvalidInput) on every rank when the job
  // must not start; the message is rank 0's (other ranks get a short one
  // that points to it).
  JobRanks(int* argc, char*** argv, const Config& config);
  ~JobRanks();
  JobRanks(const JobRanks&) = delete;
  JobRanks& operator=(const JobRanks&) = delete;

  bool drives_the_job() const { return rank_ == 0; }
  // Whether this rank runs `job`: rank 0
  // always; every rank trains a data-parallel job, each its replica, and
  // trains or predicts with a job whose devices span hosts, each its
  // host's devices.
  bool runs(Job job, const Config& config) const {
    return rank_ == 0 || (job == Job::kTrain && config.data_parallel.replicas > 1) ||
           (stages_ && (job == Job::kTrain || job == Job::kPredict));
  }
  // A job whose devices span hosts: this rank's part; null otherwise.
  const HostStages* stages() const { return stages_.get(); }
  // Throws devmap::Error (kInvalidInput) on every rank when `job` cannot
  // run across these hosts: training and prediction run devices on several
  // hosts, without measuring first (device_map `auto`, micro_batches
  // `auto`, calibrate).
  void check_job(Job job, const Config& config) const;
  // Sums a buffer over the ranks in rank order (MpiSession::
  // allreduce_sum_ordered, done when the returned test is first called);
  // with one rank, leaves it as it is.
  GradientExchange::StartSum start_sum() const;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // "rank 1 on node2": what names this process in a job of several ranks.
  const std::string& where() const { return where_; }

  // Rank 0: hands the job's exit code to every rank. Other ranks: wait
  // (sleeping, not spinning) for it and return it. A rank of a
  // data-parallel job, or of one whose devices span hosts, whose own run
  // failed (`exit_code` not 0) may have left the others inside a gradient
  // exchange or waiting for its tensors: it ends the whole job instead
  // (MpiSession::abort) and does not return. Call once.
  int finish(int exit_code, const Config& config);

 private:
  // Stops the job at start-up: throws devmap::Error (kInvalidInput) on
  // every rank, rank 0's saying `problem`, the others' that rank 0 says
  // why. Under a launcher each rank writes its message to stderr itself and
  // waits for every other to have written before it throws an empty one:
  // mpirun ends the others as soon as one exits.
  [[noreturn]] void refuse_to_start(const std::string& problem) const;

  struct Mpi;
  std::unique_ptr<Mpi> mpi_;
  std::unique_ptr<HostStages> stages_;
  int rank_ = 0, size_ = 1;
  std::string where_;
  std::string off_rank0_;  // "node2/cpu:0 on node2": a device on another host than rank 0's
};

}  // namespace devmap
