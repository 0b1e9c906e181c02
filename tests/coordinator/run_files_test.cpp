// The checks a run makes of its files before it starts (run_outputs.h), the
// names the stale-run sweep reads (stale_runs.h) and AtomicFile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "coordinator/run/run_outputs.h"
#include "coordinator/run/stale_runs.h"
#include "coordinator/util/atomic_file.h"
#include "core/base/error.h"
#include "tests/coordinator/temp_dir.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;

std::string refusal(const RunFiles& files) {
  try {
    check_run_files(files);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

TEST(RunFiles, AnOutputThatIsAnInputByAnyNameIsRefused) {
  test::TempDir dir;
  std::ofstream(dir.file("w.safetensors")) << "weights";
  fs::create_hard_link(dir.file("w.safetensors"), dir.file("link.safetensors"));
  const RunFiles ok{{{"weights", dir.file("w.safetensors")}}, {{"output", dir.file("p.csv")}}};
  EXPECT_EQ(refusal(ok), "");
  const RunFiles link{{{"weights", dir.file("w.safetensors")}}, {{"output", dir.file("link.safetensors")}}};
  EXPECT_EQ(refusal(link), "output '" + dir.file("link.safetensors") + "' is the same file as weights '" +
                               dir.file("w.safetensors") +
                               "': the run would overwrite what it reads; name another file");
  // Not there yet: the same path, however written.
  const RunFiles path{{}, {{"metrics file", dir.file("m.jsonl")}, {"output", dir.file("x/../m.jsonl")}}};
  EXPECT_NE(refusal(path).find("is the same file as metrics file"), std::string::npos);
  // Outputs of one role may be one file (a checkpoint and its step link).
  const RunFiles role{
      {}, {{"train.checkpoint", dir.file("w.safetensors")}, {"train.checkpoint", dir.file("link.safetensors")}}};
  EXPECT_EQ(refusal(role), "");
}

TEST(RunFiles, FoldersAreRefused) {
  test::TempDir dir;
  fs::create_directories(dir.file("sub"));
  std::ofstream(dir.file("file")) << "x";
  EXPECT_EQ(
      refusal({{}, {{"train.checkpoint", dir.file("sub")}}}),
      "cannot write train.checkpoint '" + dir.file("sub") + "': it is a folder; name a file (inside it, for example)");
  EXPECT_EQ(refusal({{}, {{"output", dir.file("file") + "/p.csv"}}}),
            "cannot write output '" + dir.file("file") + "/p.csv': '" + dir.file("file") + "' is a file, not a folder");
  // Missing folders are fine: runs create them; nothing is left by the check.
  EXPECT_EQ(refusal({{}, {{"output", dir.file("a/b/p.csv")}}}), "");
  EXPECT_FALSE(fs::exists(dir.file("a")));
}

TEST(RunNames, RunIdsComeFromNamesOfRuns) {
  EXPECT_EQ(run_id_of("devmap-1234-0123456789abcdef-input"), "1234-0123456789abcdef");
  EXPECT_EQ(run_id_of("devmap-1234-0123456789abcdef"), "1234-0123456789abcdef");
  EXPECT_EQ(run_id_of("devmap-1234-0123456789abcdef-lock"), "1234-0123456789abcdef");
  EXPECT_EQ(run_id_of("devmap-1234-test-x"), "");
  EXPECT_EQ(run_id_of("devmap-test-abc"), "");
  EXPECT_EQ(run_lock_path("1-0123456789abcdef", "/d"), "/d/devmap-1-0123456789abcdef-lock");
}

TEST(AtomicFile, TheOldFileStaysUntilCommit) {
  test::TempDir dir;
  const std::string path = dir.file("p.csv");
  std::ofstream(path) << "old";
  {
    AtomicFile f(path, "predictions");
    f.stream() << "new";
    EXPECT_TRUE(fs::exists(f.temporary_path()));
  }  // not committed
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.file("")), fs::directory_iterator()), 1);
  write_file_atomically(path, "new", "predictions");
  std::ifstream again(path);
  std::string now((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_EQ(now, "new");
}

}  // namespace
}  // namespace devmap
