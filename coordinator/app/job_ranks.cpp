#include "coordinator/app/job_ranks.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "coordinator/config/hosts.h"
#include "coordinator/config/names.h"
#include "coordinator/plan/auto_placement.h"
#include "coordinator/plan/calibration_cache.h"
#include "coordinator/util/version.h"
#include "core/base/process_stats.h"
#include "transport/wire.h"

#ifdef DEVMAP_HAS_MPI
#include "transport/mpi_edge_relay.h"
#include "transport/mpi_session.h"
#endif

namespace devmap {
namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// localhost and the loopback addresses name whatever machine a rank is on.
bool names_own_machine(const std::string& name) {
  const std::string n = lowercase(name);
  return n == "localhost" || n.rfind("localhost.", 0) == 0 || n.rfind("127.", 0) == 0;
}

std::vector<std::string> ipv4_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) out.emplace_back(text);
  }
  freeifaddrs(list);
  return out;
}

std::string rank_on(size_t rank, const RankFacts& f) {
  return "rank " + std::to_string(rank) + " on " + f.host;
}

// The ranks' host names, in rank order: "node1, node2".
std::string rank_hosts(const std::vector<RankFacts>& ranks) {
  std::vector<std::string> hosts;
  for (const RankFacts& r : ranks) hosts.push_back(r.host);
  return join_names(hosts);
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

std::optional<std::string> builds_differ(const std::vector<RankFacts>& ranks) {
  for (size_t r = 1; r < ranks.size(); ++r)
    if (ranks[r].protocol != ranks[0].protocol || ranks[r].build != ranks[0].build)
      return rank_on(r, ranks[r]) + " runs devmap " + ranks[r].build + " (protocol " +
             std::to_string(ranks[r].protocol) + "), but " + rank_on(0, ranks[0]) + " runs devmap " + ranks[0].build +
             " (protocol " + std::to_string(ranks[0].protocol) + "): every host must run the same build of devmap";
  return std::nullopt;
}

std::optional<std::string> configs_differ(const std::vector<RankFacts>& ranks) {
  for (size_t r = 1; r < ranks.size(); ++r)
    if (ranks[r].config_digest != ranks[0].config_digest)
      return rank_on(r, ranks[r]) + " read another config than " + rank_on(0, ranks[0]) + " (digest " +
             ranks[r].config_digest + " against " + ranks[0].config_digest +
             "): every host must read the same file with the same --set options";
  return std::nullopt;
}

// Replicas are one per rank, several to a host if the launcher says so; any
// other job has one rank per host (its devices' hosts name the ranks).
std::optional<std::string> two_ranks_on_a_host(const std::vector<RankFacts>& ranks, const Config& config) {
  if (config.data_parallel.replicas > 1) return std::nullopt;
  for (size_t a = 0; a < ranks.size(); ++a)
    for (size_t b = a + 1; b < ranks.size(); ++b)
      if (ranks[a].host == ranks[b].host)
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " both run on " + ranks[a].host +
               ": a job has one rank per host (mpirun --map-by ppr:1:node, srun --ntasks-per-node=1), or one per "
               "replica with data_parallel.replicas";
  return std::nullopt;
}

std::optional<std::string> hosts_differ(const std::vector<RankFacts>& ranks, const Config& config, bool launched) {
  if (config.hosts.empty()) return std::nullopt;  // the hosts are the launcher's
  const std::string at = config.hosts_loc.prefix();
  // Two listed names for one rank's machine ([vm, 127.0.0.1]) would run as one host.
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::vector<std::string> names;
    for (const std::string& host : config.hosts)
      if (names_host(host, ranks[r])) names.push_back(host);
    if (names.size() > 1)
      return at + "hosts: " + join_names(names) + " all name the machine of " + rank_on(r, ranks[r]) +
             ": list each host once (localhost and 127.x name a rank's own machine)";
  }
  for (const std::string& host : config.hosts) {
    std::set<std::string> machines;
    for (const RankFacts& r : ranks)
      if (names_host(host, r)) machines.insert(lowercase(r.host));
    if (machines.size() > 1)
      return at + "hosts: " + devmap::quoted(host) + " names the machine of every rank (" + rank_hosts(ranks) +
             "): name each host";
    if (!machines.empty()) continue;
    if (!launched)
      return at + "hosts: the config spans " + join_names(config.hosts) + ", and this process runs on " +
             ranks[0].host + " without an MPI launcher: start the job with scripts/launch.sh --hosts " +
             comma_list(config.hosts) + " " + config.path + " (or mpirun or srun, one rank per host)";
    return at + "hosts: no rank runs on " + host + ": the launcher started ranks on " + rank_hosts(ranks) +
           ", and every host the config lists needs one";
  }
  for (size_t r = 0; r < ranks.size(); ++r)
    if (std::none_of(config.hosts.begin(), config.hosts.end(),
                     [&](const std::string& host) { return names_host(host, ranks[r]); }))
      return at + "hosts: " + rank_on(r, ranks[r]) + ", a host the config's hosts (" + join_names(config.hosts) +
             ") do not list: list it, or start no rank there";
  return std::nullopt;
}

std::optional<std::string> devices_declared_twice(const std::vector<RankFacts>& ranks, const Config& config) {
  for (size_t i = 0; i < config.devices.size(); ++i) {
    const DeviceSpec& d = config.devices[i];
    for (size_t j = 0; j < i; ++j) {
      const DeviceSpec& e = config.devices[j];
      if (split_host(e.name).device == split_host(d.name).device && (e.host.empty() || names_host(e.host, ranks[0])) &&
          (d.host.empty() || names_host(d.host, ranks[0])))
        return d.loc.prefix() + "devices: " + devmap::quoted(std::min(d.name, e.name)) + " and " +
               devmap::quoted(std::max(d.name, e.name)) +
               " are the same device: the job's coordinator (rank 0) runs on " + ranks[0].host +
               ", where a device without a host is; declare it once";
    }
  }
  return std::nullopt;
}

// The first device on another host than rank 0's, or null.
const DeviceSpec* device_off_rank0(const std::vector<RankFacts>& ranks, const Config& config) {
  for (const DeviceSpec& d : config.devices)
    if (!d.host.empty() && !names_host(d.host, ranks[0])) return &d;
  return nullptr;
}

std::optional<std::string> stages_and_restarts(const std::vector<RankFacts>& ranks, const Config& config) {
  const DeviceSpec* off = device_off_rank0(ranks, config);
  // (Replicas take devices without hosts: the config refuses the rest.)
  if (off && config.train.max_restarts > 0)
    return config.hosts_loc.prefix() + "train.max_restarts " + std::to_string(config.train.max_restarts) +
           " with devices on several hosts (" + off->name + " is on " + off->host +
           "): one host restarting its workers alone would leave the others mid-step; set it to 0 and resume with "
           "--resume instead";
  return std::nullopt;
}

const char* environment(const char* name) {
  return std::getenv(name);
}

}  // namespace

bool started_by_mpi_launcher(const char* (*getenv)(const char*)) {
  if (!getenv) getenv = environment;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (getenv(name)) return true;
  return false;
}

std::string RankFacts::encode() const {
  std::string out = host + "\n" + std::to_string(protocol) + "\n" + build + "\n" + config_digest + "\n";
  out += comma_list(addresses);
  return out;
}

RankFacts RankFacts::decode(const std::string& text) {
  RankFacts f;
  std::istringstream in(text);
  std::string protocol, addresses;
  std::getline(in, f.host);
  std::getline(in, protocol);
  std::getline(in, f.build);
  std::getline(in, f.config_digest);
  std::getline(in, addresses);
  f.protocol = static_cast<uint32_t>(std::strtoul(protocol.c_str(), nullptr, 10));
  std::istringstream list(addresses);
  for (std::string a; std::getline(list, a, ',');)
    if (!a.empty()) f.addresses.push_back(a);
  return f;
}

RankFacts local_rank_facts(const std::string& host, const Config& config) {
  RankFacts f;
  f.host = host;
  f.addresses = ipv4_addresses();
  f.protocol = wire::kProtocolVersion;
  f.build = devmap_version();
  f.config_digest = key_hash(config.resolved_yaml);
  return f;
}

bool names_host(const std::string& name, const RankFacts& rank) {
  // Host names ignore case; localhost and 127.x name the rank's own machine.
  const std::string n = lowercase(name), host = lowercase(rank.host);
  if (n == host || names_own_machine(n)) return true;
  if (host.size() > n.size() && host.compare(0, n.size(), n) == 0 && host[n.size()] == '.') return true;
  return std::find(rank.addresses.begin(), rank.addresses.end(), name) != rank.addresses.end();
}

std::optional<std::string> job_ranks_problem(const std::vector<RankFacts>& ranks, const Config& config, bool launched) {
  if (ranks.empty()) return "a job needs at least one rank";
  for (auto check : {builds_differ, configs_differ})
    if (auto problem = check(ranks)) return problem;
  if (auto problem = two_ranks_on_a_host(ranks, config)) return problem;
  if (auto problem = hosts_differ(ranks, config, launched)) return problem;
  const int64_t replicas = config.data_parallel.replicas;
  if (replicas > 1 && replicas != static_cast<int64_t>(ranks.size()))
    return config.data_parallel.loc.prefix() + "data_parallel.replicas " + std::to_string(replicas) +
           " runs one replica per rank, but " +
           (launched ? "the launcher started " + std::to_string(ranks.size()) + " rank" +
                           (ranks.size() == 1 ? "" : "s") + " (on " + rank_hosts(ranks) + ")"
                     : "no MPI launcher started this process, on " + ranks[0].host) +
           ": start " + std::to_string(replicas) +
           " ranks (scripts/launch.sh --hosts node1,node2, or node1:2 for two "
           "on node1)";
  if (auto problem = devices_declared_twice(ranks, config)) return problem;
  return stages_and_restarts(ranks, config);
}

std::map<std::string, int> device_ranks(const std::vector<RankFacts>& ranks, const Config& config) {
  std::map<std::string, int> out;
  for (const DeviceSpec& d : config.devices) {
    out[d.name] = 0;
    for (size_t r = 0; r < ranks.size() && !d.host.empty(); ++r)
      if (names_host(d.host, ranks[r])) out[d.name] = static_cast<int>(r);
  }
  return out;
}

#ifdef DEVMAP_HAS_MPI
struct JobRanks::Mpi {
  MpiSession session;
  Mpi(int* argc, char*** argv) : session(argc, argv) {}
};
#else
struct JobRanks::Mpi {};
#endif

JobRanks::JobRanks([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv, const Config& config) {
  const bool launched = started_by_mpi_launcher();
  std::vector<RankFacts> ranks;
  if (launched) {
#ifdef DEVMAP_HAS_MPI
    mpi_ = std::make_unique<Mpi>(argc, argv);
    rank_ = mpi_->session.rank();
    size_ = mpi_->session.size();
    for (const std::string& text : mpi_->session.allgather(local_rank_facts(mpi_->session.host(), config).encode()))
      ranks.push_back(RankFacts::decode(text));
#else
    throw_invalid(
        "an MPI launcher (mpirun or srun) started this coordinator, but it was built without MPI: install "
        "libopenmpi-dev (scripts/setup.sh does) and rebuild, or run it without a launcher");
#endif
  } else {
    ranks.push_back(local_rank_facts(host_name().value_or("localhost"), config));
  }
  where_ = rank_on(static_cast<size_t>(rank_), ranks[static_cast<size_t>(rank_)]);
  if (auto problem = job_ranks_problem(ranks, config, launched)) refuse_to_start(*problem);
#ifdef DEVMAP_HAS_MPI
  if (const DeviceSpec* off = device_off_rank0(ranks, config); off && mpi_) {
    off_rank0_ = off->name + " on " + off->host;
    const MpiSession* session = &mpi_->session;
    HostLinks links;
    links.allgather = [session](const std::string& mine, const std::function<void()>& pump) {
      return session->allgather_while(mine, pump);
    };
    links.send = [session](const void* data, size_t bytes, int dest) {
      session->send_bytes(data, bytes, dest, kCheckpointTag);
    };
    links.recv = [session](void* data, size_t bytes, int source) {
      session->recv_bytes(data, bytes, source, kCheckpointTag);
    };
    links.relay = [session](RelayPlan plan) { return make_mpi_edge_relay(*session, std::move(plan)); };
    stages_ = std::make_unique<HostStages>(rank_, device_ranks(ranks, config), std::move(links));
  }
#endif
}

void JobRanks::check_job(Job job, const Config& config) const {
  if (!stages_) return;
  std::string problem;
  if (job != Job::kTrain && job != Job::kPredict)
    problem = std::string(job_name(job)) + " with devices on several hosts (" + off_rank0_ +
              ") is not built yet: training and prediction run pipeline stages across hosts; " + job_name(job) +
              " with a device map on one host";
  else if (has_auto_placement(config) || config.train.auto_micro_batches())
    problem = config.path + ": device_map `auto` and train.micro_batches `auto` measure the devices first, which " +
              "is not built for devices on several hosts (" + off_rank0_ +
              "): place every op and give the micro-batches";
  if (!problem.empty()) refuse_to_start(problem);
}

void JobRanks::refuse_to_start(const std::string& problem) const {
  const std::string said = rank_ == 0 ? problem : "devmap: " + where_ + ": the job did not start (rank 0 says why)";
#ifdef DEVMAP_HAS_MPI
  if (mpi_) {
    std::cerr << said + "\n" << std::flush;  // one write: mpirun interleaves the ranks' lines
    mpi_->session.barrier();
    throw Error(ErrorKind::kInvalidInput, "");  // said above
  }
#endif
  throw_invalid(said);
}

JobRanks::~JobRanks() = default;

GradientExchange::StartSum JobRanks::start_sum() const {
#ifdef DEVMAP_HAS_MPI
  if (mpi_) {
    const MpiSession* session = &mpi_->session;
    // Non-blocking: the coordinator tests the sum between its workers'
    // messages, and sleeps in between, while they go on with the backward
    // pass (MPI's blocking calls would poll a core the workers need).
    return [session](float* data, size_t count) -> std::function<bool()> {
      std::shared_ptr<MpiSession::PendingSum> sum = session->start_sum_ordered(data, count);
      return [sum] { return sum->test(); };
    };
  }
#endif
  return [](float*, size_t) -> std::function<bool()> { return [] { return true; }; };
}

int JobRanks::finish([[maybe_unused]] int exit_code, [[maybe_unused]] const Config& config) {
#ifdef DEVMAP_HAS_MPI
  if (!mpi_) return exit_code;
  if (exit_code != 0 && (config.data_parallel.replicas > 1 || stages_)) mpi_->session.abort(exit_code);
  return mpi_->session.broadcast_sleeping(exit_code, 0);
#else
  return exit_code;
#endif
}

}  // namespace devmap
