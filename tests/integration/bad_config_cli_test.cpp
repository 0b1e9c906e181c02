// Runs the real coordinator on every malformed config of
// tests/configs/bad/expected.txt: the first line of stderr must be exactly
// the expected message and the exit status 2, with nothing launched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/graph/op_schema.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kBadDir = std::string(DEVMAP_SOURCE_DIR) + "/tests/configs/bad";

struct BadConfig {
  std::string file, expected;
};

std::vector<BadConfig> load_table() {
  std::vector<BadConfig> table;
  std::ifstream in(kBadDir + "/expected.txt");
  for (std::string line; std::getline(in, line);) {
    auto tab = line.find('\t');
    if (line.empty() || line[0] == '#' || tab == std::string::npos) continue;
    BadConfig b{line.substr(0, tab), line.substr(tab + 1)};
    std::string path = kBadDir + "/" + b.file;
    for (size_t pos; (pos = b.expected.find("{FILE}")) != std::string::npos;) b.expected.replace(pos, 6, path);
    std::string known;
    for (const std::string& op : known_op_names()) known += (known.empty() ? "" : ", ") + op;
    for (size_t pos; (pos = b.expected.find("{KNOWN_OPS}")) != std::string::npos;) b.expected.replace(pos, 11, known);
    table.push_back(b);
  }
  return table;
}

TEST(BadConfigCli, EveryMalformedConfigExitsTwoWithItsExactMessage) {
  auto table = load_table();
  ASSERT_GE(table.size(), 10u);
  TempDir dir;
  for (const BadConfig& b : table) {
    ProcessResult r =
        run_process({DEVMAP_COORDINATOR_BIN, "train", kBadDir + "/" + b.file, "--metrics", dir.path() + "/m.jsonl"},
                    dir.path(), {"TMPDIR=" + dir.path()});
    EXPECT_EQ(r.exit_code, 2) << b.file << ": " << r.err;
    EXPECT_EQ(r.first_err_line(), b.expected) << b.file;
  }
  // A config error stops the run before any worker or file exists.
  for (const std::string& e : tree_entries(dir.path()))
    EXPECT_EQ(e.find("/devmap-", dir.path().size()), std::string::npos) << "left behind: " << e;
}

// A valid config whose hosts are not this machine needs an MPI launcher:
// the ranks' start-up check (coordinator/app/job_ranks.h) says so, exit 2.
TEST(BadConfigCli, HostsOtherThanThisMachineNeedALauncher) {
  TempDir dir;
  const std::string config = std::string(DEVMAP_SOURCE_DIR) + "/tests/configs/hosts_without_launcher.yaml";
  ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "train", config}, dir.path());
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.first_err_line(), config + ":3:1: hosts: the config spans node1, node2, and this process runs on " +
                                    host +
                                    " without an MPI launcher: start the job with scripts/launch.sh --hosts "
                                    "node1,node2 " +
                                    config + " (or mpirun or srun, one rank per host)");
}

// scripts/launch.sh --hosts refuses, exit 2 and before mpirun or a build,
// counts that bash arithmetic would wrap, counts past its caps, an empty
// list and one host named twice in different case.
TEST(BadConfigCli, LaunchHostListsThatCannotBeMeantExitTwo) {
  TempDir dir;
  const std::string launch = std::string(DEVMAP_SOURCE_DIR) + "/scripts/launch.sh";
  const std::string config = std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_mlp.yaml";
  const std::string build =
      std::string(DEVMAP_COORDINATOR_BIN).substr(0, std::string(DEVMAP_COORDINATOR_BIN).rfind("/bin/"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--hosts=vm:99999999999999999999",
       "launch.sh: --hosts 'vm:99999999999999999999': vm:99999999999999999999 asks for 99999999999999999999 ranks "
       "on one host; give 1 to 64"},
      {"--hosts=vm:9223372036854775807,vm2:1",
       "launch.sh: --hosts 'vm:9223372036854775807,vm2:1': vm:9223372036854775807 asks for 9223372036854775807 "
       "ranks on one host; give 1 to 64"},
      {"--hosts=vm:0", "launch.sh: --hosts 'vm:0': vm:0 asks for 0 ranks on one host; give 1 to 64"},
      {"--hosts=", "launch.sh: --hosts names no host: give host names separated by commas, e.g. --hosts node1,node2"},
      {"--hosts=vm,VM",
       "launch.sh: --hosts 'vm,VM': vm and VM are the same host (host names ignore case); name it once, with :N for "
       "N ranks"},
  };
  for (const auto& [hosts, message] : cases) {
    ProcessResult r = run_process({launch, hosts, config}, dir.path(), {"DEVMAP_BUILD_DIR=" + build});
    EXPECT_EQ(r.exit_code, 2) << hosts << ": " << r.err;
    EXPECT_EQ(r.first_err_line(), message) << hosts;
  }
}

TEST(BadConfigCli, BadCommandLinesExitTwo) {
  TempDir dir;
  ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "train"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(), "no config file given (see --help)");
  r = run_process({DEVMAP_COORDINATOR_BIN, "--bogus", "x.yaml"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.first_err_line(), "unknown option '--bogus' (see --help)");
  r = run_process({DEVMAP_COORDINATOR_BIN, "train", dir.path() + "/missing.yaml"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.first_err_line().find("missing.yaml"), std::string::npos) << r.err;
  r = run_process({DEVMAP_COORDINATOR_BIN, "--help"}, dir.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: coordinator"), std::string::npos);
}

}  // namespace
}  // namespace devmap::testing
