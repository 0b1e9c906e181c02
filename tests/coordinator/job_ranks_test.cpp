// The start-up agreement of a job's ranks (coordinator/app/job_ranks.h): what
// each rank reports, and every reason a job across hosts must not start.
#include "coordinator/app/job_ranks.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::kMinimalModel;

Config two_host_config(const std::string& devices = "devices: {node1/cpu:0: {}, cpu:1: {}}\n") {
  return load_config_text(kMinimalModel + "hosts: [node1, node2]\n" + devices, "a.yaml");
}

RankFacts facts(const std::string& host, const Config& config) {
  RankFacts f = local_rank_facts(host, config);
  f.addresses = {host == "node1" ? "10.77.0.11" : "10.77.0.12"};
  return f;
}

std::string problem(const std::vector<RankFacts>& ranks, const Config& config, bool launched = true) {
  return job_ranks_problem(ranks, config, launched).value_or("(none)");
}

TEST(JobRanks, FactsCrossAsOneLineOfTextEachWay) {
  RankFacts f;
  f.host = "node-2.lan";
  f.addresses = {"10.0.0.2", "127.0.0.1"};
  f.protocol = 7;
  f.build = "0.1.0";
  f.config_digest = "00ff00ff00ff00ff";
  const RankFacts back = RankFacts::decode(f.encode());
  EXPECT_EQ(back.host, f.host);
  EXPECT_EQ(back.addresses, f.addresses);
  EXPECT_EQ(back.protocol, 7u);
  EXPECT_EQ(back.build, "0.1.0");
  EXPECT_EQ(back.config_digest, f.config_digest);
  EXPECT_TRUE(RankFacts::decode(RankFacts{}.encode()).addresses.empty());
}

TEST(JobRanks, TheLauncherIsRecognisedByItsVariables) {
  static std::map<std::string, std::string> vars;
  auto lookup = [](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  vars = {};
  EXPECT_FALSE(started_by_mpi_launcher(lookup));
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    vars = {{name, "0"}};
    EXPECT_TRUE(started_by_mpi_launcher(lookup)) << name;
  }
}

// Host names ignore case; localhost and 127.x name a rank's own machine, so
// one listed beside that machine's name, or for ranks on several machines,
// is refused.
TEST(JobRanks, LocalhostNamesARanksOwnMachineAndCaseIsIgnored) {
  const Config local = load_config_text(kMinimalModel + "hosts: [localhost]\ndevices: {cpu:0: {}}\n", "a.yaml");
  EXPECT_TRUE(names_host("localhost", facts("node1", local)));
  EXPECT_TRUE(names_host("127.0.0.1", facts("node1", local)));
  EXPECT_TRUE(names_host("NODE1", facts("node1", local)));
  EXPECT_EQ(problem({facts("node1", local)}, local, false), "(none)");
  const Config twice = load_config_text(kMinimalModel + "hosts: [node1, 127.0.0.1]\ndevices: {cpu:0: {}}\n", "a.yaml");
  EXPECT_EQ(problem({facts("node1", twice)}, twice),
            "a.yaml:8:1: hosts: node1, 127.0.0.1 all name the machine of rank 0 on node1: list each host once "
            "(localhost and 127.x name a rank's own machine)");
  EXPECT_EQ(problem({facts("node1", local), facts("node2", local)}, local),
            "a.yaml:8:1: hosts: 'localhost' names the machine of every rank (node1, node2): name each host");
}

TEST(JobRanks, AHostIsNamedByItsNameItsFirstLabelOrAnAddress) {
  RankFacts r;
  r.host = "node1.cluster.lan";
  r.addresses = {"10.77.0.11"};
  EXPECT_TRUE(names_host("node1.cluster.lan", r));
  EXPECT_TRUE(names_host("node1", r));
  EXPECT_TRUE(names_host("10.77.0.11", r));
  EXPECT_FALSE(names_host("node", r));
  EXPECT_TRUE(names_host("node1.cluster", r));
  EXPECT_FALSE(names_host("node2", r));
  EXPECT_FALSE(names_host("10.77.0.1", r));
}

TEST(JobRanks, RanksThatAgreeStartTheJob) {
  const Config c = two_host_config();
  EXPECT_EQ(problem({facts("node1", c), facts("node2", c)}, c), "(none)");
  // By address, in another order than the ranks.
  const Config by_address = load_config_text(kMinimalModel + "hosts: [10.77.0.12, node1]\n", "a.yaml");
  EXPECT_EQ(problem({facts("node1", by_address), facts("node2", by_address)}, by_address), "(none)");
  // One machine, no launcher, no hosts: today's jobs.
  const Config local = load_config_text(kMinimalModel, "a.yaml");
  EXPECT_EQ(problem({facts("vm", local)}, local, false), "(none)");
  // hosts naming only this machine need no launcher.
  const Config here = load_config_text(kMinimalModel + "hosts: [node1]\ndevices: {node1/cpu:0: {}}\n", "a.yaml");
  EXPECT_EQ(problem({facts("node1", here)}, here, false), "(none)");
}

TEST(JobRanks, AnotherBuildOrConfigOnAHostStopsTheJob) {
  const Config c = two_host_config();
  RankFacts old = facts("node2", c);
  old.protocol -= 1;
  EXPECT_EQ(problem({facts("node1", c), old}, c),
            "rank 1 on node2 runs devmap " + old.build + " (protocol " + std::to_string(old.protocol) +
                "), but rank 0 on node1 runs devmap " + old.build + " (protocol " + std::to_string(old.protocol + 1) +
                "): every host must run the same build of devmap");
  const Config other = load_config_text(kMinimalModel + "hosts: [node1, node2]\ntrain: {seed: 2}\n", "a.yaml");
  const RankFacts f1 = facts("node1", c), f2 = facts("node2", other);
  EXPECT_EQ(problem({f1, f2}, c), "rank 1 on node2 read another config than rank 0 on node1 (digest " +
                                      f2.config_digest + " against " + f1.config_digest +
                                      "): every host must read the same file with the same --set options");
}

TEST(JobRanks, TheRanksMustBeTheConfigsHostsOneEach) {
  const Config c = two_host_config();
  EXPECT_EQ(problem({facts("node1", c), facts("node1", c)}, c),
            "ranks 0 and 1 both run on node1: a job has one rank per host (mpirun --map-by ppr:1:node, srun "
            "--ntasks-per-node=1), or one per replica with data_parallel.replicas");
  EXPECT_EQ(problem({facts("node1", c)}, c),
            "a.yaml:8:1: hosts: no rank runs on node2: the launcher started ranks on node1, and every host the "
            "config lists needs one");
  EXPECT_EQ(problem({facts("node1", c)}, c, false),
            "a.yaml:8:1: hosts: the config spans node1, node2, and this process runs on node1 without an MPI "
            "launcher: start the job with scripts/launch.sh --hosts node1,node2 a.yaml (or mpirun or srun, one rank "
            "per host)");
  RankFacts third = facts("node3", c);
  third.addresses = {"10.77.0.13"};
  EXPECT_EQ(problem({facts("node1", c), facts("node2", c), third}, c),
            "a.yaml:8:1: hosts: rank 2 on node3, a host the config's hosts (node1, node2) do not list: list it, or "
            "start no rank there");
  // Without a hosts section the hosts are the launcher's.
  const Config local = load_config_text(kMinimalModel, "a.yaml");
  EXPECT_EQ(problem({facts("node1", local), facts("node2", local)}, local), "(none)");
}

TEST(JobRanks, DevicesOnOtherHostsAreStagesOfOneJobOnTheirHostsRanks) {
  const Config c = two_host_config("devices: {node1/cpu:0: {}, node2/cpu:0: {}, cpu:1: {}}\n");
  const std::vector<RankFacts> ranks{facts("node1", c), facts("node2", c)};
  EXPECT_EQ(problem(ranks, c), "(none)");
  EXPECT_EQ(device_ranks(ranks, c), (std::map<std::string, int>{{"cpu:1", 0}, {"node1/cpu:0", 0}, {"node2/cpu:0", 1}}));
  // The ranks in another order: the map follows the hosts, not the order.
  EXPECT_EQ(device_ranks({facts("node2", c), facts("node1", c)}, c).at("node2/cpu:0"), 0);
  const Config restarts =
      load_config_text(kMinimalModel + "hosts: [node1, node2]\ndevices: {node1/cpu:0: {}, node2/cpu:0: {}}\n", "a.yaml",
                       {"train.max_restarts=2"});
  EXPECT_EQ(problem(ranks, restarts),
            "a.yaml:8:1: train.max_restarts 2 with devices on several hosts (node2/cpu:0 is on node2): one host "
            "restarting its workers alone would leave the others mid-step; set it to 0 and resume with --resume "
            "instead");
}

TEST(JobRanks, DataParallelReplicasAreOnePerRank) {
  const Config c = load_config_text(kMinimalModel + "data_parallel: {replicas: 2}\n", "a.yaml");
  EXPECT_EQ(problem({facts("node1", c), facts("node2", c)}, c), "(none)");
  EXPECT_EQ(problem({facts("node1", c)}, c),
            "a.yaml:8:17: data_parallel.replicas 2 runs one replica per rank, but the launcher started 1 rank (on "
            "node1): start 2 ranks (scripts/launch.sh --hosts node1,node2, or node1:2 for two on node1)");
  EXPECT_EQ(problem({facts("node1", c)}, c, false),
            "a.yaml:8:17: data_parallel.replicas 2 runs one replica per rank, but no MPI launcher started this "
            "process, on node1: start 2 ranks (scripts/launch.sh --hosts node1,node2, or node1:2 for two on node1)");
  // Several replicas may share a host; the config's hosts still need a rank each.
  const Config four = load_config_text(kMinimalModel + "data_parallel: {replicas: 4}\n", "a.yaml");
  EXPECT_EQ(problem({facts("node1", four), facts("node2", four), facts("node1", four), facts("node2", four)}, four),
            "(none)");
  const Config hosted =
      load_config_text(kMinimalModel + "hosts: [node1, node2]\ndata_parallel: {replicas: 2}\n", "a.yaml");
  EXPECT_EQ(problem({facts("node1", hosted), facts("node1", hosted)}, hosted),
            "a.yaml:8:1: hosts: no rank runs on node2: the launcher started ranks on node1, node1, and every host the "
            "config lists needs one");
}

TEST(JobRanks, TheSameDeviceNamedWithAndWithoutItsHostIsRefused) {
  const Config c = two_host_config("devices: {node1/cpu:0: {}, cpu:0: {}}\n");
  EXPECT_EQ(problem({facts("node1", c), facts("node2", c)}, c),
            "a.yaml:9:28: devices: 'cpu:0' and 'node1/cpu:0' are the same device: the job's coordinator (rank 0) "
            "runs on node1, where a device without a host is; declare it once");
}

}  // namespace
}  // namespace devmap
