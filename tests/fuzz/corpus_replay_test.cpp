// Replays every committed fuzz input (fuzz/corpus/<target>/) through its
// target with the normal compiler, no libFuzzer needed: the corpus, crash
// reproducers included, is a regression test. A target that lets anything
// but devmap::Error escape fails here; a crash or broken invariant aborts
// the binary; with DEVMAP_FUZZ_REPLAY_VERBOSE=1 set, each file is named on
// stderr before it runs, so the last name is the culprit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fuzz/fuzz_targets.h"

namespace devmap::fuzz {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CorpusReplay : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(CorpusReplay, EveryInputIsHandledWithoutACrash) {
  const FuzzTarget& target = GetParam();
  const fs::path dir = fs::path(DEVMAP_SOURCE_DIR) / "fuzz" / "corpus" / target.name;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  EXPECT_FALSE(files.empty()) << dir << " holds no input";
  const bool verbose = std::getenv("DEVMAP_FUZZ_REPLAY_VERBOSE") != nullptr;
  for (const fs::path& file : files) {
    if (verbose) std::cerr << "replaying " << file << std::endl;
    const std::string bytes = read_file(file);
    try {
      target.run(bytes);
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": escaped with " << e.what();
    } catch (...) {
      ADD_FAILURE() << file << ": escaped with a non-standard exception";
    }
    if (::testing::Test::HasFailure()) {
      std::cerr << "reproduce: build/fuzz/bin/fuzz_" << target.name << " " << file << "\n";
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, CorpusReplay, ::testing::ValuesIn(fuzz_targets()),
                         [](const ::testing::TestParamInfo<FuzzTarget>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace devmap::fuzz
