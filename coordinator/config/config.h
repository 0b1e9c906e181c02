// Config: the resolved contents of one YAML file (after --set overrides),
// validated. Everything downstream trusts it. docs/CONFIG.md documents every
// key; keep the two in step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/device_kind.h"
#include "core/base/error.h"
#include "core/exec/kernel.h"
#include "core/graph/graph.h"
#include "core/graph/split_op.h"
#include "core/plan/pipeline_schedule.h"

namespace devmap {

// The device name that leaves an op's device to the placement planner
// (device_map.default, a place rule, a group's or an op's `device`).
inline constexpr const char* kAutoDevice = "auto";

struct DeviceSpec {
  std::string name;  // "cpu:0", "gpu:0"; "node1/cpu:0" on a host of `hosts`
  std::string host;  // the host part of `name`; empty: this machine
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;
  int threads = 1;           // threads of this device's worker (its pool and OpenBLAS)
  int64_t memory_limit = 0;  // bytes; 0 = no limit
  // `offload: parameters`: the trained parameters of its ops, their
  // gradients and optimizer state live in host memory outside memory_limit
  // and stream through a staging pool (core/plan/offload_layout.h).
  bool offload = false;
  // Whether the config gives `offload` (`none` included): `auto` placement
  // turns offload on by itself only where it is not given.
  bool offload_given = false;
  // CPU core ids the device's worker is pinned to: distinct, each in
  // [0, 1024), in the order written. Empty = not pinned.
  std::vector<int> affinity;
  SourceLoc loc;
};

// One entry of device_map.place: ops whose name matches `pattern` (a glob,
// see config_glob.h) run on `device`. Entries keep file order; an entry
// added by --set comes last.
struct PlaceRule {
  std::string pattern;  // "fc*", "logits"
  std::string device;   // a declared device
  SourceLoc loc;        // of the pattern; file "--set KEY=VALUE" when set there
};

struct DataConfig {
  // MNIST-format (IDX) files, gzip or plain. Defaults: Debian's
  // dataset-fashion-mnist in /usr/share/datasets/fashion-mnist.
  std::string train_images, train_labels, test_images, test_labels;
  int64_t train_limit = 0;  // use only the first N training samples (0 = all)
  int64_t test_limit = 0;   // use only the first N test samples (0 = all)
};

struct TrainConfig {
  int64_t epochs = 1;
  int64_t batch_size = 64;
  int64_t eval_batch_size = 256;
  int64_t max_steps = 0;  // stop after this many steps in total (0 = no limit)
  uint64_t seed = 0;
  bool shuffle = true;
  // Parameter gradients are summed over chunks of this many samples, the
  // chunks added in order (Executor::set_gradient_chunk; 0: whole batches).
  int64_t gradient_chunk = 32;
  OptimizerConfig optimizer;
  // Where the weights go (safetensors) at the end and every
  // checkpoint_every steps (0: only at the end); the training state goes
  // beside them. Empty: checkpoints/<config file stem>.safetensors.
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  // Weights (safetensors, the checkpoint's names and shapes) to start from
  // instead of the seed's initialisation: what `devmap import` writes. A
  // resumed run continues from its checkpoint instead. Empty: none.
  std::string init_weights;
  // Each checkpoint is also kept under a name with its step
  // (<checkpoint stem>.step-<N>.safetensors); the newest keep_checkpoints
  // stay, older ones are deleted.
  int64_t keep_checkpoints = 3;
  // After a worker fails, relaunch the workers and resume from the last
  // checkpoint, up to this many times per run (0: fail at once).
  int64_t max_restarts = 0;
  // train.pipeline: how a step's micro-batches flow through the devices
  // (core/plan/pipeline_schedule.h). micro_batches 1: no pipelining; evaluation
  // rounds take as many batches at a time. kAutoMicroBatches: chosen by
  // predicted step time (coordinator/plan/job_memory.h).
  PipelineKind pipeline = PipelineKind::k1f1b;
  int64_t micro_batches = 1;
  // Whether the config (or a --set) names them: `auto` placement then keeps
  // them instead of choosing its own.
  bool schedule_given = false, micro_batches_given = false;
  static constexpr int64_t kAutoMicroBatches = 0;
  bool auto_micro_batches() const { return micro_batches == kAutoMicroBatches; }
  // A loss that is NaN or infinite stops training (true), or is reported
  // once while training goes on (false). Either way, a checkpoint whose
  // weights are not all finite is never written.
  bool stop_on_nonfinite = true;
  // train.micro_batch_statistics: refuse makes a training step split into
  // micro-batches (by the budget or train.pipeline) an error when an op
  // couples the samples of its batch (OpSchema::couples_samples); allow
  // (the default) runs it and says so.
  bool refuse_micro_batch_statistics = false;
  // train.recompute: auto (the default) lets the plan recompute the ops
  // whose own `recompute` is auto when a device needs the memory
  // (coordinator/plan/recompute_plan.h); never treats them as `never`, so
  // only ops pinned `always` are recomputed.
  bool recompute_auto = true;
};

// How the coordinator tells failed workers from slow ones, and how long a
// graceful stop may take. Durations in seconds.
struct FaultConfig {
  // A worker that has not finished the step (or checkpoint write) in
  // flight while no worker has finished an instruction for
  // max(step_timeout, kPlannedStepFactor x the planned step time) is
  // declared hung and killed.
  double step_timeout = 30;
  // A worker whose watchdog has sent no heartbeat for this long is declared
  // unresponsive (stopped, or cut off).
  double heartbeat_timeout = 10;
  // After SIGINT or SIGTERM: the time allowed to finish the step, write the
  // checkpoint and stop the workers before the run aborts.
  double grace_period = 30;
  // Each phase of a worker's start-up (spawned to HELLO, PLAN to READY)
  // must end within this long, or the run stops naming the device and
  // the phase.
  double startup_timeout = 60;
  static constexpr double kPlannedStepFactor = 10;
};

// The predict job's settings; the command line's --weights, --input,
// --output and --batch override them.
struct PredictConfig {
  std::string weights;  // safetensors written by a train run
  std::string input;    // images: IDX (gzip or plain) or CSV pixel rows
  std::string output;   // the ImageId,Label CSV to write
  int64_t batch = 0;    // images per step; 0: train.eval_batch_size
};

// data_parallel: copies of the device map, one per host of the job, each
// training on its share of every step's samples; their gradients are
// summed across hosts before each update.
struct DataParallelConfig {
  int64_t replicas = 1;
  SourceLoc loc;  // of the `replicas` key
  // Gradients are summed in buckets of about this many bytes, each as soon
  // as the backward pass has made it (coordinator/run/gradient_exchange.h).
  int64_t bucket_size = int64_t{4} << 20;
  static constexpr int64_t kMaxReplicas = 64;
};

// What a run does. A config's `job` is train or predict; the command line
// may ask for plan or calibrate instead (app/cli.h).
enum class Job { kTrain, kPredict, kPlan, kCalibrate };
// "train", "predict", "plan", "calibrate".
const char* job_name(Job job);
// The job named `name`; nullopt for any other text.
std::optional<Job> parse_job(std::string_view name);

struct Config {
  std::string path;       // the YAML file as given
  Job job = Job::kTrain;  // kTrain or kPredict
  Graph graph;            // ops in order, shapes inferred, each op's device set
  DataConfig data;
  TrainConfig train;
  PredictConfig predict;
  FaultConfig faults;
  int64_t coordinator_memory_limit = 0;  // coordinator.memory_limit in bytes; 0 = no limit
  int64_t shared_memory_limit = 0;       // coordinator.shared_memory_limit in bytes; 0 = no limit
  std::vector<DeviceSpec> devices;       // declared devices, in file order
  std::vector<std::string> hosts;        // `hosts`, in file order; empty: this machine only
  SourceLoc hosts_loc;                   // of the `hosts` key
  DataParallelConfig data_parallel;
  std::string default_device;         // device_map.default, resolved (never empty)
  bool allow_soft_placement = false;  // ops on an unusable GPU move to a CPU device instead of failing
  std::vector<PlaceRule> place;       // device_map.place, in order; each matches at least one op

  // Why each op runs where it does, parallel to graph.nodes(): the rule of
  // the precedence in docs/CONFIG.md that placed it, one of
  //   "device_map.place 'fc*' (cfg.yaml:40:7)"   (or "(--set KEY=VALUE)")
  //   "op's device"
  //   "group 'features'"
  //   kPlacedByDefault
  //   kPlacedBySplit (a part of a split op), kPlacedBySplitConsumer (the
  //   concat that joins the parts, where the op's first consumer runs)
  std::vector<std::string> placement_reason;
  static constexpr const char* kPlacedByDefault = "device_map.default";
  static constexpr const char* kPlacedBySplit = "op's split";
  static constexpr const char* kPlacedBySplitConsumer = "op's split (joined where its consumer runs)";

  // The splits `auto` chose (coordinator/plan/auto_levers.h), by op: the
  // shares its `split` key would pin (--emit-map writes them).
  std::map<std::string, std::vector<SplitShare>> auto_splits;
  // The conv algorithms `auto` chose for less workspace
  // (coordinator/plan/conv_algorithm_lever.h), by op: "gemm".
  std::map<std::string, std::string> auto_algorithms;

  // The YAML after overrides, as text: written beside each run's metrics.
  std::string resolved_yaml;

  const DeviceSpec* find_device(const std::string& name) const;
  // Per node: whether the user chose its device (anything but the default).
  std::vector<bool> placed_by_user() const;
};

}  // namespace devmap
