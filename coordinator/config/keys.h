// The keys a config may hold, per section: one list that both validation
// and --set overrides check against. docs/CONFIG.md documents each key.
#pragma once

#include <string>
#include <vector>

namespace devmap::config_keys {

inline const std::vector<std::string> kTop = {"job",     "model",       "data",       "train",
                                              "predict", "devices",     "device_map", "allow_soft_placement",
                                              "faults",  "coordinator", "hosts",      "data_parallel"};
inline const std::vector<std::string> kDataParallel = {"replicas", "bucket_size"};
inline const std::vector<std::string> kCoordinator = {"memory_limit", "shared_memory_limit"};
inline const std::vector<std::string> kFaults = {"step_timeout", "heartbeat_timeout", "grace_period",
                                                 "startup_timeout"};
inline const std::vector<std::string> kPredict = {"weights", "input", "output", "batch"};
inline const std::vector<std::string> kModel = {"ops"};
inline const std::vector<std::string> kData = {"train_images", "train_labels", "test_images",
                                               "test_labels",  "train_limit",  "test_limit"};
inline const std::vector<std::string> kTrain = {
    "epochs",           "batch_size",     "eval_batch_size", "max_steps",         "seed",
    "shuffle",          "gradient_chunk", "optimizer",       "checkpoint",        "checkpoint_every",
    "keep_checkpoints", "max_restarts",   "pipeline",        "stop_on_nonfinite", "micro_batch_statistics",
    "init_weights",     "recompute"};
// train.micro_batch_statistics: whether a step split into micro-batches may
// run an op that computes statistics over its batch (batch_norm).
inline const std::vector<std::string> kMicroBatchStatistics = {"allow", "refuse"};
// train.recompute: whether the plan may recompute ops left `auto`.
inline const std::vector<std::string> kTrainRecompute = {"auto", "never"};
inline const std::vector<std::string> kPipeline = {"schedule", "micro_batches"};
// Every optimizer key; each type accepts a subset (optimizer_keys).
inline const std::vector<std::string> kOptimizer = {"type",  "learning_rate", "momentum", "weight_decay",
                                                    "beta1", "beta2",         "epsilon",  "schedule"};
// The keys optimizer `type` reads (one of kOptimizerTypes; others: those of
// every type).
inline std::vector<std::string> optimizer_keys(const std::string& type) {
  std::vector<std::string> keys = {"type", "learning_rate", "weight_decay"};
  if (type == "momentum") keys.push_back("momentum");
  if (type == "adam") keys.insert(keys.end(), {"beta1", "beta2", "epsilon"});
  if (type != "sgd" && type != "momentum" && type != "adam") return kOptimizer;
  keys.push_back("schedule");
  return keys;
}
// train.optimizer.schedule: every key; each type accepts a subset
// (schedule_keys).
inline const std::vector<std::string> kSchedule = {
    "type", "warmup_steps", "warmup_start_factor", "step_size", "gamma", "min_learning_rate", "steps"};
inline const std::vector<std::string> kScheduleTypes = {"constant", "step", "cosine"};
// The keys schedule `type` reads (one of kScheduleTypes; others: those of
// every type).
inline std::vector<std::string> schedule_keys(const std::string& type) {
  std::vector<std::string> keys = {"type", "warmup_steps", "warmup_start_factor"};
  if (type == "step") keys.insert(keys.end(), {"step_size", "gamma"});
  if (type == "cosine") keys.insert(keys.end(), {"min_learning_rate", "steps"});
  if (type != "constant" && type != "step" && type != "cosine") return kSchedule;
  return keys;
}
inline const std::vector<std::string> kDevice = {"threads", "memory_limit", "affinity", "offload"};
// device_map.place is a mapping from op-name patterns to devices: its keys
// are the user's, not from a list.
inline const std::vector<std::string> kDeviceMap = {"default", "place"};
// An op's own keys; all others are the op's attributes.
inline const std::vector<std::string> kOp = {"name", "op", "inputs", "device", "recompute", "split"};
// An op's `recompute` values (Node::Recompute).
inline const std::vector<std::string> kRecompute = {"auto", "always", "never"};
// A group's keys: an entry of model.ops (or of a group's ops) with a
// `group` key is a group, holding ops and further groups.
inline const std::vector<std::string> kGroup = {"group", "device", "ops"};

inline const std::vector<std::string> kJobs = {"train", "predict"};
inline const std::vector<std::string> kOptimizerTypes = {"sgd", "momentum", "adam"};

// Where Debian's dataset-fashion-mnist puts Fashion-MNIST.
inline const std::string kDatasetDir = "/usr/share/datasets/fashion-mnist/";

}  // namespace devmap::config_keys
