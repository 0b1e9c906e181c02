// CheckpointStore: names, how many are kept, and which one resuming takes
// when the newest was cut short.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/checkpoint/checkpoint.h"
#include "coordinator/checkpoint/store.h"
#include "core/graph/safetensors.h"
#include "tests/support/run_process.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A safetensors file with one tensor and the step in its metadata.
void write_file(const std::string& path, int64_t step, size_t cut = 0) {
  SafetensorsLayout l = make_safetensors_layout({{"w", Shape{4}}}, {{"step", std::to_string(step)}});
  const std::string bytes = safetensors_head(l) + std::string(l.data_bytes, '\0');
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - cut);
}

void write_checkpoint(CheckpointStore& store, int64_t step) {
  write_file(store.weights_for(step), step);
  write_file(state_path_for(store.weights_for(step)), step);
  store.commit(step);
}

std::vector<int64_t> steps(const CheckpointStore& store) {
  std::vector<int64_t> out;
  for (const CheckpointFiles& c : store.list()) out.push_back(c.step);
  return out;
}

TEST(CheckpointStore, NamesEachCheckpointByItsStep) {
  CheckpointStore store("/x/model.safetensors", 3);
  EXPECT_EQ(store.weights_for(120), "/x/model.step-120.safetensors");
  EXPECT_EQ(state_path_for(store.weights_for(120)), "/x/model.step-120.state.safetensors");
}

TEST(CheckpointStore, KeepsTheNewestAndPointsTheNewestNameAtTheLast) {
  TempDir dir;
  const std::string path = dir.path() + "/m.safetensors";
  CheckpointStore store(path, 2);
  for (int64_t s : {4, 8, 12}) write_checkpoint(store, s);
  EXPECT_EQ(steps(store), (std::vector<int64_t>{12, 8}));
  EXPECT_FALSE(fs::exists(dir.path() + "/m.step-4.safetensors"));
  EXPECT_FALSE(fs::exists(dir.path() + "/m.step-4.state.safetensors"));
  EXPECT_EQ(read_safetensors_layout(path).metadata.at("step"), "12");
  EXPECT_EQ(read_safetensors_layout(state_path_for(path)).metadata.at("step"), "12");
}

TEST(CheckpointStore, ACheckpointCutShortDoesNotHideThePreviousOne) {
  TempDir dir;
  CheckpointStore store(dir.path() + "/m.safetensors", 3);
  write_checkpoint(store, 4);
  write_checkpoint(store, 8);
  // Step 12's weights are truncated; step 16 lacks its state; a
  // temporary file of a dead writer lies about.
  write_file(store.weights_for(12), 12, 7);
  write_file(state_path_for(store.weights_for(12)), 12);
  write_file(store.weights_for(16), 16);
  write_file(dir.path() + "/m.step-20.safetensors.tmp-999999", 20, 3);
  std::ostringstream log;
  auto c = store.latest_valid(log);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->step, 8);
  EXPECT_NE(log.str().find("m.step-16.safetensors: its training state"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("m.step-12.safetensors: "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("outside the 9 data bytes"), std::string::npos) << log.str();
}

TEST(CheckpointStore, WeightsAndStateOfDifferentStepsAreRefused) {
  TempDir dir;
  CheckpointStore store(dir.path() + "/m.safetensors", 3);
  write_file(store.weights_for(8), 8);
  write_file(state_path_for(store.weights_for(8)), 7);
  auto why = CheckpointStore::problem(store.list().at(0));
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "the weights are from step 8 and the state from step 7");
}

TEST(CheckpointStore, AFreshRunReplacesTheCheckpointsOfAnEarlierOne) {
  TempDir dir;
  const std::string path = dir.path() + "/m.safetensors";
  {
    CheckpointStore earlier(path, 3);
    for (int64_t s : {40, 50}) write_checkpoint(earlier, s);
  }
  CheckpointStore fresh(path, 3);
  write_checkpoint(fresh, 10);
  EXPECT_EQ(steps(fresh), (std::vector<int64_t>{10}));
  CheckpointStore resumed(path, 3);
  resumed.adopt_existing();
  write_checkpoint(resumed, 20);
  EXPECT_EQ(steps(resumed), (std::vector<int64_t>{20, 10}));
}

TEST(CheckpointStore, AnOlderSingleCheckpointIsStillFound) {
  TempDir dir;
  const std::string path = dir.path() + "/m.safetensors";
  write_file(path, 30);
  write_file(state_path_for(path), 30);
  CheckpointStore store(path, 3);
  std::ostringstream log;
  auto c = store.latest_valid(log);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->weights, path);
}

}  // namespace
}  // namespace devmap
