// MpiSession across the namespace hosts of scripts/testbed.sh (three, made
// for the suite: testbed_suite.h); mpirun runs mpi_session_ranks across the
// hosts over TCP only. Skipped, with the reason, where the build has no MPI
// or namespaces cannot be made.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <regex>
#include <sstream>

#include "tests/multihost/allreduce_data.h"
#include "tests/multihost/testbed_suite.h"
#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

class MpiAcrossHosts : public TestbedSuite {
 protected:
  static void SetUpTestSuite() { bring_up(3); }
  static void TearDownTestSuite() { tear_down(); }

  // mpirun -np N --map-by node: rank r on host node(r+1).
  static ProcessResult mpirun(int ranks, const std::vector<std::string>& args) {
    std::vector<std::string> argv{
        kTestbed, "mpirun", "-np", std::to_string(ranks), "--map-by", "node", DEVMAP_MPI_RANKS_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, dir_->path(), env());
  }

  static std::string digest_of(int ranks, size_t count) {
    std::vector<float> sum = rank_order_sum(ranks, count);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, bits_digest(sum.data(), count));
    return hex;
  }
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST_F(MpiAcrossHosts, RanksLearnTheirHostFromMpi) {
  ProcessResult r = mpirun(3, {"allreduce", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "rank 0 of 3 on node1\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 1 of 3 on node2\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 2 of 3 on node3\n")) << r.out;
}

TEST_F(MpiAcrossHosts, TensorCrossesHostsThroughTheVethLink) {
  const size_t count = 1 << 20;  // 4 MiB
  const uint64_t nbytes = count * sizeof(float);
  auto before1 = bytes("node1"), before2 = bytes("node2");
  ProcessResult r = mpirun(2, {"tensor", std::to_string(count)});
  auto after1 = bytes("node1"), after2 = bytes("node2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "rank 1 received " + std::to_string(nbytes) + " bytes, 0 elements wrong\n")) << r.out;
  // Every byte went out of node1's eth0 and into node2's: none took a
  // shortcut through shared memory or the loopback.
  EXPECT_GE(after1.second - before1.second, nbytes);
  EXPECT_GE(after2.first - before2.first, nbytes);
}

TEST_F(MpiAcrossHosts, ShapeMismatchIsRefusedWithBothShapes) {
  ProcessResult r = mpirun(2, {"mismatch"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "rank 1 refused: MPI: rank 0 sent a tensor of shape [2,3] (tag 8) where rank 1 "
                       "expects [3,2]\n"))
      << r.out;
}

TEST_F(MpiAcrossHosts, AllreduceIsTheRankOrderSumToTheBitAndRepeats) {
  const size_t count = 1000003;  // not a multiple of the rank count
  // The data is chosen so that the order of addition shows in the bits.
  ASSERT_NE(digest_of(3, count), [&] {
    std::vector<float> rev = rank_order_sum(3, count, true);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, bits_digest(rev.data(), count));
    return std::string(hex);
  }());
  for (int ranks : {2, 3}) {
    const std::string expected = digest_of(ranks, count);
    std::string first;
    for (int run = 0; run < 2; ++run) {
      auto before = bytes("node2");
      ProcessResult r = mpirun(ranks, {"allreduce", std::to_string(count)});
      auto after = bytes("node2");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      for (int rank = 0; rank < ranks; ++rank)
        EXPECT_TRUE(contains(r.out, "rank " + std::to_string(rank) + " allreduce " + std::to_string(count) +
                                        " floats digest " + expected + "\n"))
            << ranks << " ranks, run " << run << ":\n"
            << r.out;
      // node2 sent its share of the slices and of the reduced result.
      EXPECT_GE(after.second - before.second, count * sizeof(float) * (ranks - 1) / ranks);
      if (run == 0) first = r.out;
    }
  }
}

// The test bed itself: up twice keeps the same hosts, down removes every
// namespace and the state folder.
TEST(Testbed, UpIsIdempotentAndDownLeavesNothing) {
  TempDir dir;
  const std::string name = "tb" + std::to_string(getpid());
  const std::vector<std::string> env{"DEVMAP_TESTBED_NAME=" + name};
  ProcessResult check = run_process({kTestbed, "check"}, dir.path(), env);
  if (check.exit_code == 77) GTEST_SKIP() << check.first_err_line();
  auto netns = [&] {
    std::string mine;
    std::istringstream list(run_process({"ip", "netns", "list"}, dir.path()).out);
    for (std::string line; std::getline(list, line);)
      if (line.rfind(name + "-", 0) == 0) mine += line.substr(0, line.find(' ')) + " ";
    return mine;
  };
  ASSERT_EQ(run_process({kTestbed, "up", "2"}, dir.path(), env).exit_code, 0);
  ProcessResult first = run_process({kTestbed, "status"}, dir.path(), env);
  ASSERT_EQ(run_process({kTestbed, "up", "2"}, dir.path(), env).exit_code, 0);
  ProcessResult second = run_process({kTestbed, "status"}, dir.path(), env);
  EXPECT_EQ(first.exit_code, 0);
  EXPECT_EQ(first.out, second.out);  // the same hosts, held by the same processes
  EXPECT_TRUE(contains(first.out, "node1 10.77.0.11/24 pid ")) << first.out;
  EXPECT_TRUE(contains(first.out, "node2 10.77.0.12/24 pid ")) << first.out;
  EXPECT_EQ(netns().size(), (name + "-node1 ").size() * 2 + (name + "-sw ").size()) << netns();
  ProcessResult host =
      run_process({kTestbed, "exec", "node2", "sh", "-c", "hostname; ls -A /dev/shm | wc -l"}, dir.path(), env);
  EXPECT_EQ(host.out, "node2\n0\n");  // its own name and an empty /dev/shm of its own
  ASSERT_EQ(run_process({kTestbed, "down"}, dir.path(), env).exit_code, 0);
  EXPECT_EQ(netns(), "");
  EXPECT_FALSE(std::filesystem::exists("/run/devmap-testbed/" + name));
  EXPECT_EQ(run_process({kTestbed, "status"}, dir.path(), env).exit_code, 1);
}

}  // namespace
}  // namespace devmap::testing
