// Where a training run's checkpoints live, and which one to resume from.
// For train.checkpoint = "d/model.safetensors":
//   d/model.step-120.safetensors        weights after step 120
//   d/model.step-120.state.safetensors  training state after step 120
//   d/model.safetensors (+ .state)      the newest checkpoint (hard links)
// A checkpoint's two files are written under temporary names and renamed
// when complete (checkpoint.h); only then does commit() point the newest
// names at them and delete all but the newest `keep`. So a checkpoint
// interrupted while being written never hides the previous good one, and
// resuming takes the newest checkpoint whose files are whole and agree,
// skipping (and saying so) any that are not.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace devmap {

struct CheckpointFiles {
  int64_t step = 0;
  std::string weights, state;
};

class CheckpointStore {
 public:
  CheckpointStore(std::string path, int64_t keep);

  const std::string& path() const { return path_; }
  // The weights file for the checkpoint of `step` (the state goes beside it,
  // see state_path_for).
  std::string weights_for(int64_t step) const;
  // After both files of `step` are in place: points the newest names at
  // them and deletes the checkpoints beyond the newest `keep` of this run.
  void commit(int64_t step);
  // Deletes both files of `step`, which commit() has not pointed at.
  void discard(int64_t step) const;
  // Counts the checkpoints already on disk as this run's (resuming).
  void adopt_existing();

  // Every checkpoint on disk, newest first: the step files, or, when there
  // are none, the newest names as one checkpoint (from an older devmap).
  std::vector<CheckpointFiles> list() const;
  // The newest checkpoint that is whole; each one skipped is reported on
  // `log` with its reason.
  std::optional<CheckpointFiles> latest_valid(std::ostream& log) const;
  // Why a checkpoint cannot be resumed from (truncated or damaged file,
  // missing state, steps that disagree), or nullopt when it can.
  static std::optional<std::string> problem(const CheckpointFiles& c);

 private:
  void point_newest_at(const std::string& target, const std::string& name) const;

  std::string path_, base_, dir_, stem_;
  int64_t keep_;
  std::set<int64_t> written_;  // steps whose checkpoints belong to this run
};

}  // namespace devmap
