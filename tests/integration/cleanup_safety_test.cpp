// Lose nothing, part two, through the real binaries: the start-up sweep of
// what crashed runs left removes nothing without proof of being a run's own
// (a user's folder named like a run's, a live run of another PID namespace
// that shares TMPDIR but has its own /dev/shm).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/safety_fixture.h"

namespace devmap::testing {
namespace {

// Point 1's reproduction: a previous run's output folder named
// devmap-<date>-results, with its weights, in TMPDIR.
TEST_F(Safety, AUsersFolderNamedLikeARunsSurvivesTheStartUpSweep) {
  const std::string results = work_ + "/devmap-2026-12-06-results";
  fs::create_directories(results);
  { std::ofstream(results + "/w.safetensors") << "the user's weights"; }
  // Named exactly as a run's folder, but without the run's marker.
  const std::string lookalike = work_ + "/devmap-999999-0123456789abcdef";
  fs::create_directories(lookalike);
  { std::ofstream(lookalike + "/notes.txt") << "the user's notes"; }
  const auto before = snapshot(work_);
  Result r = coordinator(mlp_train(3, work_ + "/o.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("removed"), std::string::npos) << r.err;
  expect_unchanged(before);
  EXPECT_EQ(shm_entries("devmap-" + std::to_string(r.pid) + "-"), std::vector<std::string>{});
}

// A live run in another PID namespace with its own /dev/shm, sharing
// TMPDIR: a run here sweeps at its start and leaves it alone (its lock file
// is in the other /dev/shm), and it trains to its end.
TEST_F(Safety, ALiveRunOfAnotherPidNamespaceSurvivesTheSweep) {
  if (!can_unshare_mounts()) GTEST_SKIP() << "cannot make PID and mount namespaces here (needs root)";
  const std::string wrapper =
      "exec unshare --pid --fork --mount --propagation private sh -c "
      "'mount -t tmpfs tmpfs /dev/shm && \"$0\" \"$@\"' \"$@\"";
  std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + work_,     "/bin/sh", "-c", wrapper,
                                   "sh",           DEVMAP_COORDINATOR_BIN};
  const auto other_args = mlp_train(400, work_ + "/other.safetensors");
  argv.insert(argv.end(), other_args.begin(), other_args.end());
  fs::create_directories(logs_ + "/other");
  BackgroundProcess other(argv, logs_ + "/other");
  // Its run folder appears in the shared TMPDIR.
  std::string folder;
  for (int i = 0; i < 1000 && folder.empty(); ++i) {
    for (const auto& e : fs::directory_iterator(work_))
      if (e.path().filename().string().rfind("devmap-", 0) == 0 && e.is_directory()) folder = e.path().string();
    if (folder.empty()) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_FALSE(folder.empty()) << other.err();
  Result here = coordinator(mlp_train(2, work_ + "/here.safetensors"));
  EXPECT_EQ(here.exit_code, 0) << here.err;
  EXPECT_EQ(here.err.find("removed"), std::string::npos) << here.err;
  EXPECT_EQ(other.wait(milliseconds(120000)), 0) << other.err();
  EXPECT_TRUE(fs::exists(work_ + "/other.safetensors"));
  EXPECT_FALSE(fs::exists(folder)) << "the other run removes its own folder at its end";
}

}  // namespace
}  // namespace devmap::testing
