// load_config: text -> YAML tree -> overrides -> checked Config. The order
// of the checks is the order of the sections in docs/CONFIG.md.
#include "coordinator/config/loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "coordinator/config/device_map.h"
#include "coordinator/config/devices.h"
#include "coordinator/config/hosts.h"
#include "coordinator/config/keys.h"
#include "coordinator/config/model.h"
#include "coordinator/config/names.h"
#include "coordinator/config/overrides.h"
#include "coordinator/config/placement.h"
#include "coordinator/config/yaml/document.h"
#include "coordinator/config/yaml/map.h"
#include "coordinator/config/yaml/scalar.h"
#include "coordinator/config/yaml/source.h"

namespace devmap {
namespace {

constexpr size_t kMaxConfigBytes = size_t{1} << 20;
constexpr int64_t kMaxBatch = int64_t{1} << 24;  // samples per batch: keeps byte counts far from overflow

MapScope section(const std::string& name) {
  return {name, "in " + name, name + ".", ""};
}

DataConfig read_data(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("data"), config_keys::kData);
  DataConfig data;
  auto path = [&](const std::string& key, const std::string& file) {
    std::string value = map.get_string(key, config_keys::kDatasetDir + file);
    if (value.empty()) map.fail_value(key, "must not be empty (omit it for " + config_keys::kDatasetDir + file + ")");
    return value;
  };
  data.train_images = path("train_images", "train-images-idx3-ubyte.gz");
  data.train_labels = path("train_labels", "train-labels-idx1-ubyte.gz");
  data.test_images = path("test_images", "t10k-images-idx3-ubyte.gz");
  data.test_labels = path("test_labels", "t10k-labels-idx1-ubyte.gz");
  data.train_limit = map.get_int("train_limit", 0, 0);
  data.test_limit = map.get_int("test_limit", 0, 0);
  return data;
}

// Splits the ops with a `split` key into their parts (core/graph/split_op.h)
// and gives each part and concat its placement reason.
void apply_splits(ModelGraph& model, std::vector<std::string>& reasons) {
  bool any = false;
  for (const auto& split : model.splits) any = any || !split.empty();
  if (!any) return;
  std::vector<int> origin;
  Graph graph = split_ops(model.graph, model.splits, origin);
  std::vector<std::string> placed;
  for (int i = 0; i < graph.size(); ++i) {
    const size_t from = static_cast<size_t>(origin[static_cast<size_t>(i)]);
    // The concat keeps the op's name; its parts and fan-outs are new names.
    placed.push_back(model.splits[from].empty() ? reasons[from]
                     : graph.node(i).name == model.graph.node(static_cast<int>(from)).name
                         ? Config::kPlacedBySplitConsumer
                         : Config::kPlacedBySplit);
  }
  model.graph = std::move(graph);
  reasons = std::move(placed);
}

// A number as %g writes it ("0.001", "1e-05").
std::string shortest(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

LrSchedule read_schedule(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("train.optimizer.schedule"), config_keys::kSchedule);
  LrSchedule s;
  const std::string type = map.get_choice("type", "constant", config_keys::kScheduleTypes);
  const std::vector<std::string> valid = config_keys::schedule_keys(type);
  for (const std::string& key : map.keys())
    if (std::find(valid.begin(), valid.end(), key) == valid.end())
      src.fail(map.key_node(key), "train.optimizer.schedule." + key + " does not apply to schedule type '" + type +
                                      "' (its keys: " + join_names(valid) + ")");
  s.kind = type == "step"     ? LrSchedule::Kind::kStep
           : type == "cosine" ? LrSchedule::Kind::kCosine
                              : LrSchedule::Kind::kConstant;
  s.warmup_steps = map.get_int("warmup_steps", 0, 0);
  s.warmup_start_factor = map.get_number("warmup_start_factor", s.warmup_start_factor, NumberRange{0, false, 1, true});
  if (s.kind == LrSchedule::Kind::kStep) {
    if (!map.has("step_size")) map.fail_missing("step_size");
    s.step_size = map.get_int("step_size", 1, 1);
    s.gamma = map.get_number("gamma", s.gamma, NumberRange{0, false});
  }
  s.min_learning_rate = map.get_number("min_learning_rate", 0.0, NumberRange{0, true});
  s.cosine_steps = map.get_int("steps", 0, 0);
  return s;
}

OptimizerConfig read_optimizer(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("train.optimizer"), config_keys::kOptimizer);
  OptimizerConfig opt;
  const std::string type = map.get_choice("type", "sgd", config_keys::kOptimizerTypes);
  // The keys each type reads; the others are mistakes worth naming.
  const std::vector<std::string> valid = config_keys::optimizer_keys(type);
  for (const std::string& key : map.keys())
    if (std::find(valid.begin(), valid.end(), key) == valid.end())
      src.fail(map.key_node(key), "train.optimizer." + key + " does not apply to optimizer type '" + type +
                                      "' (its keys: " + join_names(valid) + ")");

  const NumberRange positive{0, false};
  const NumberRange non_negative{0, true};
  const NumberRange unit{0, true, 1, false};  // [0, 1)
  opt.kind = type == "adam"       ? OptimizerConfig::Kind::kAdam
             : type == "momentum" ? OptimizerConfig::Kind::kMomentum
                                  : OptimizerConfig::Kind::kSgd;
  opt.learning_rate = map.get_number("learning_rate", opt.learning_rate, positive);
  opt.weight_decay = map.get_number("weight_decay", opt.weight_decay, non_negative);
  opt.momentum = map.get_number("momentum", opt.momentum, unit);
  opt.beta1 = map.get_number("beta1", opt.beta1, unit);
  opt.beta2 = map.get_number("beta2", opt.beta2, unit);
  opt.epsilon = map.get_number("epsilon", opt.epsilon, positive);
  if (map.has("schedule")) {
    opt.schedule = read_schedule(src, map.value("schedule"));
    if (opt.schedule.min_learning_rate > opt.learning_rate)
      src.fail(map.value("schedule")["min_learning_rate"],
               "train.optimizer.schedule.min_learning_rate " + shortest(opt.schedule.min_learning_rate) +
                   " is above train.optimizer.learning_rate " + shortest(opt.learning_rate) +
                   ": the cosine falls from the learning rate to this minimum");
  }
  return opt;
}

PredictConfig read_predict(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("predict"), config_keys::kPredict);
  PredictConfig p;
  p.weights = map.get_string("weights", p.weights);
  p.input = map.get_string("input", p.input);
  p.output = map.get_string("output", p.output);
  p.batch = map.get_int("batch", p.batch, 1, kMaxBatch);
  return p;
}

TrainConfig read_train(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("train"), config_keys::kTrain);
  TrainConfig train;
  train.epochs = map.get_int("epochs", train.epochs, 1);
  train.batch_size = map.get_int("batch_size", train.batch_size, 1, kMaxBatch);
  train.eval_batch_size = map.get_int("eval_batch_size", train.eval_batch_size, 1, kMaxBatch);
  train.max_steps = map.get_int("max_steps", train.max_steps, 0);
  train.seed = map.get_uint("seed", train.seed);
  train.shuffle = map.get_bool("shuffle", train.shuffle);
  train.gradient_chunk = map.get_int("gradient_chunk", train.gradient_chunk, 0, kMaxBatch);
  train.checkpoint = map.get_string("checkpoint", train.checkpoint);
  train.checkpoint_every = map.get_int("checkpoint_every", train.checkpoint_every, 0);
  train.init_weights = map.get_string("init_weights", train.init_weights);
  train.keep_checkpoints = map.get_int("keep_checkpoints", train.keep_checkpoints, 1, 1000);
  train.max_restarts = map.get_int("max_restarts", train.max_restarts, 0, 1000);
  train.stop_on_nonfinite = map.get_bool("stop_on_nonfinite", train.stop_on_nonfinite);
  train.refuse_micro_batch_statistics =
      map.get_choice("micro_batch_statistics", "allow", config_keys::kMicroBatchStatistics) == "refuse";
  train.recompute_auto = map.get_choice("recompute", "auto", config_keys::kTrainRecompute) == "auto";
  if (map.has("optimizer")) train.optimizer = read_optimizer(src, map.value("optimizer"));
  if (map.has("pipeline")) {
    MapReader pipe(src, map.value("pipeline"), section("train.pipeline"), config_keys::kPipeline);
    train.pipeline =
        parse_pipeline_kind(pipe.get_choice("schedule", pipeline_kind_name(train.pipeline), pipeline_kind_names()));
    train.schedule_given = pipe.has("schedule");
    train.micro_batches_given = pipe.has("micro_batches");
    const bool is_auto = pipe.has("micro_batches") && pipe.value("micro_batches").IsScalar() &&
                         pipe.value("micro_batches").Scalar() == "auto";
    if (is_auto) {
      train.micro_batches = TrainConfig::kAutoMicroBatches;
    } else {
      const YAML::Node* v = pipe.has("micro_batches") ? &pipe.value("micro_batches") : nullptr;
      if (v && (!v->IsScalar() || v->Scalar().find_first_not_of("0123456789") != std::string::npos))
        pipe.fail_value("micro_batches",
                        "must be a count from 1 to " + std::to_string(kMaxMicroBatches) + " or auto, got '" +
                            (v->IsScalar() ? v->Scalar() : "a " + std::string(v->IsMap() ? "mapping" : "list")) + "'");
      train.micro_batches = pipe.get_int("micro_batches", train.micro_batches, 1, kMaxMicroBatches);
    }
  }
  return train;
}

FaultConfig read_faults(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("faults"), config_keys::kFaults);
  FaultConfig f;
  const NumberRange seconds{0, false, 7 * 24 * 3600.0, true};  // (0 s, a week]
  f.step_timeout = map.get_number("step_timeout", f.step_timeout, seconds);
  f.heartbeat_timeout = map.get_number("heartbeat_timeout", f.heartbeat_timeout, seconds);
  f.grace_period = map.get_number("grace_period", f.grace_period, seconds);
  f.startup_timeout = map.get_number("startup_timeout", f.startup_timeout, seconds);
  return f;
}

// After devices and train: each replica needs a sample of every step, and
// runs the whole device map on its own host.
DataParallelConfig read_data_parallel(const YamlSource& src, const YAML::Node& node, const Config& config) {
  MapReader map(src, node, section("data_parallel"), config_keys::kDataParallel);
  DataParallelConfig dp;
  dp.replicas = map.get_int("replicas", dp.replicas, 1, DataParallelConfig::kMaxReplicas);
  if (map.has("bucket_size")) {
    dp.bucket_size = read_memory_limit(map, "bucket_size");
    if (dp.bucket_size == 0) map.fail_value("bucket_size", "must be above 0, e.g. 4MiB");
  }
  if (!map.has("replicas")) return dp;
  dp.loc = src.loc(map.key_node("replicas"));
  if (dp.replicas > config.train.batch_size)
    src.fail(map.anchor("replicas"), "data_parallel.replicas " + std::to_string(dp.replicas) +
                                         " is more than train.batch_size " + std::to_string(config.train.batch_size) +
                                         ": every replica trains on a share of each step's samples");
  if (dp.replicas > 1 && config.train.max_restarts > 0)
    src.fail(map.anchor("replicas"),
             "data_parallel.replicas " + std::to_string(dp.replicas) + " with train.max_restarts " +
                 std::to_string(config.train.max_restarts) +
                 " is not built yet: a replica that restarted alone would leave the others; set "
                 "train.max_restarts: 0 and resume the whole job with --resume");
  if (dp.replicas > 1)
    for (const DeviceSpec& d : config.devices)
      if (!d.host.empty())
        src.fail(map.anchor("replicas"), "data_parallel.replicas " + std::to_string(dp.replicas) +
                                             ": each replica runs the whole "
                                             "device map on its own host, so device names carry no host, but " +
                                             quoted(d.name) + " does");
  return dp;
}

std::string emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

Config load_tree(YAML::Node root, const std::string& name, const std::vector<std::string>& overrides, YamlSource& src) {
  if (root.IsNull())
    throw_invalid(src.start_prefix() + "the config is empty: it needs at least a model (see configs/*.yaml)");
  if (!root.IsMap())
    src.fail(root, "the config must be a mapping with keys such as job, model and train, got " + describe_node(root));
  check_yaml_tree(root, src);
  apply_overrides(root, overrides, src);
  if (!overrides.empty()) check_yaml_tree(root, src);  // bounds what the overrides added, too

  Config config;
  config.path = name;
  MapReader top(src, root, {"", "at the top level", "", ""}, config_keys::kTop);
  if (!top.has("model")) top.fail_missing("model");
  config.job = *parse_job(top.get_choice("job", job_name(config.job), config_keys::kJobs));
  config.allow_soft_placement = top.get_bool("allow_soft_placement", config.allow_soft_placement);
  if (top.has("hosts")) {
    config.hosts = read_hosts(src, top.value("hosts"), top.anchor("hosts"));
    config.hosts_loc = src.loc(top.key_node("hosts"));
  }
  if (top.has("devices")) {
    config.devices = read_devices(src, top.value("devices"), top.anchor("devices"), config.hosts);
  } else {
    DeviceSpec cpu;
    cpu.name = "cpu:0";
    config.devices.push_back(cpu);
  }
  const DeviceMapSection device_map =
      read_device_map(src, top.has("device_map") ? top.value("device_map") : YAML::Node(), config.devices);
  config.default_device = device_map.default_device;
  for (const PlaceEntry& entry : device_map.place) config.place.push_back(entry.rule);
  config.data = read_data(src, top.has("data") ? top.value("data") : YAML::Node());
  config.train = read_train(src, top.has("train") ? top.value("train") : YAML::Node());
  config.predict = read_predict(src, top.has("predict") ? top.value("predict") : YAML::Node());
  config.faults = read_faults(src, top.has("faults") ? top.value("faults") : YAML::Node());
  if (top.has("coordinator")) {
    MapReader coordinator(src, top.value("coordinator"), section("coordinator"), config_keys::kCoordinator);
    if (coordinator.has("memory_limit")) config.coordinator_memory_limit = read_memory_limit(coordinator);
    if (coordinator.has("shared_memory_limit"))
      config.shared_memory_limit = read_memory_limit(coordinator, "shared_memory_limit");
  }
  if (top.has("data_parallel")) config.data_parallel = read_data_parallel(src, top.value("data_parallel"), config);
  ModelGraph model = build_model_graph(top.value("model"), src, config.job, config.devices);
  check_place_matches(device_map.place, model.graph, model.groups, src);
  config.placement_reason = place_ops(model.graph, model.requests, device_map.place, config.default_device);
  apply_splits(model, config.placement_reason);
  check_placed_ops_supported(model.graph, config.devices, config.placement_reason);
  config.graph = std::move(model.graph);
  config.resolved_yaml = emit(root);
  return config;
}

}  // namespace

Config load_config_text(const std::string& text, const std::string& name, const std::vector<std::string>& overrides) {
  YamlSource src(name);
  if (text.size() > kMaxConfigBytes)
    throw_invalid(src.start_prefix() + "the config is " + std::to_string(text.size()) +
                  " bytes; a config may be at most 1 MiB");
  YAML::Node root = parse_yaml_document(text, src);
  try {
    return load_tree(root, name, overrides, src);
  } catch (const YAML::Exception& e) {
    // The checks above leave yaml-cpp nothing to object to; should it still
    // throw, the user gets a located devmap::Error rather than a crash.
    throw_invalid(src.start_prefix() + "YAML error: " + e.msg);
  }
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  auto fail = [&](const std::string& why) -> void { throw_invalid("cannot read config '" + path + "': " + why); };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("it is a directory");
  // Read at most one byte past the limit, so that a huge file costs nothing.
  std::string text(kMaxConfigBytes + 1, '\0');
  size_t size = 0;
  while (size < text.size()) {
    ssize_t n = ::read(fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::strerror(errno));
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  if (size > kMaxConfigBytes) fail("it is larger than 1 MiB; a config is a short YAML file");
  text.resize(size);
  return load_config_text(text, path, overrides);
}

}  // namespace devmap
