// load_config: text -> YAML tree -> overrides -> checked Config. The order
// of the checks is the order of the sections in docs/CONFIG.md.
#include "coordinator/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "coordinator/config_keys.h"
#include "coordinator/config_model.h"
#include "coordinator/config_names.h"
#include "coordinator/config_overrides.h"
#include "coordinator/config_size.h"
#include "coordinator/yaml_document.h"
#include "coordinator/yaml_map.h"
#include "coordinator/yaml_scalar.h"
#include "coordinator/yaml_source.h"

namespace devmap {
namespace {

constexpr size_t kMaxConfigBytes = size_t{1} << 20;

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

OptimizerConfig read_optimizer(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("train.optimizer"), config_keys::kOptimizer);
  OptimizerConfig opt;
  const std::string type = map.get_choice("type", "sgd", config_keys::kOptimizerTypes);
  // The keys each type reads; the others are mistakes worth naming.
  std::vector<std::string> valid = {"type", "learning_rate", "weight_decay"};
  if (type == "momentum") valid.push_back("momentum");
  if (type == "adam") valid.insert(valid.end(), {"beta1", "beta2", "epsilon"});
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
  return opt;
}

TrainConfig read_train(const YamlSource& src, const YAML::Node& node) {
  MapReader map(src, node, section("train"), config_keys::kTrain);
  TrainConfig train;
  train.epochs = map.get_int("epochs", train.epochs, 1);
  train.batch_size = map.get_int("batch_size", train.batch_size, 1);
  train.eval_batch_size = map.get_int("eval_batch_size", train.eval_batch_size, 1);
  train.max_steps = map.get_int("max_steps", train.max_steps, 0);
  train.seed = map.get_uint("seed", train.seed);
  train.shuffle = map.get_bool("shuffle", train.shuffle);
  if (map.has("optimizer")) train.optimizer = read_optimizer(src, map.value("optimizer"));
  return train;
}

DeviceSpec read_device(const YamlSource& src, const YAML::Node& key, const YAML::Node& value) {
  DeviceSpec spec;
  spec.name = key.Scalar();
  auto parsed = parse_device_name(spec.name);
  if (!parsed) src.fail(key, "devices: " + bad_device_name_message(spec.name));
  spec.kind = parsed->kind;
  spec.index = parsed->index;
  spec.loc = src.loc(key);
  MapReader map(src, value, section("devices." + spec.name), config_keys::kDevice);
  spec.threads = static_cast<int>(map.get_int("threads", 1, 1, 1024));
  if (map.has("memory_limit")) {
    const YAML::Node& limit = map.value("memory_limit");
    if (auto negative = scalar_int(limit); negative && *negative < 0)
      map.fail_value("memory_limit", "must be >= 0, got " + std::to_string(*negative));
    auto bytes = limit.IsScalar() ? parse_byte_size(limit.Scalar()) : std::nullopt;
    if (!bytes)
      map.fail_value("memory_limit", "must be a number of bytes or a size such as 64MiB or 1.5GiB, got " +
                                         describe_node(limit) + " (units: " + kByteSizeUnits + ")");
    spec.memory_limit = *bytes;
  }
  return spec;
}

// `anchor` is where to point when `node` is not a mapping of devices.
std::vector<DeviceSpec> read_devices(const YamlSource& src, const YAML::Node& node, const YAML::Node& anchor) {
  if (!node.IsMap() || node.size() == 0)
    src.fail(anchor, std::string("devices must ") +
                         (node.IsMap() || node.IsNull() ? "declare at least one device"
                                                        : "be a mapping of device names, got " + describe_node(node)) +
                         ", e.g. devices: {cpu:0: {threads: 2}}");
  std::vector<DeviceSpec> devices;
  for (const auto& kv : node) devices.push_back(read_device(src, kv.first, kv.second));
  return devices;
}

std::string read_default_device(const YamlSource& src, const YAML::Node& node, const std::vector<DeviceSpec>& devices) {
  MapReader map(src, node, section("device_map"), config_keys::kDeviceMap);
  if (!map.has("default")) return devices.front().name;
  std::string name = map.get_string("default", "");
  if (!parse_device_name(name)) src.fail(map.anchor("default"), "device_map.default: " + bad_device_name_message(name));
  std::vector<std::string> declared;
  for (const DeviceSpec& d : devices) declared.push_back(d.name);
  if (std::find(declared.begin(), declared.end(), name) == declared.end())
    map.fail_value("default",
                   "is '" + name + "', which is not declared in devices (declared: " + join_names(declared) + ")");
  return name;
}

std::string emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

const DeviceSpec* Config::find_device(const std::string& name) const {
  for (const DeviceSpec& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

namespace {

Config load_tree(YAML::Node root, const std::string& name, const std::vector<std::string>& overrides, YamlSource& src) {
  if (root.IsNull())
    throw_invalid(src.start_prefix() + "the config is empty: it needs at least a model (see configs/*.yaml)");
  if (!root.IsMap())
    src.fail(root, "the config must be a mapping with keys such as job, model and train, got " + describe_node(root));
  check_yaml_tree(root, src);
  apply_overrides(root, overrides, src);

  Config config;
  config.path = name;
  MapReader top(src, root, {"", "at the top level", "", ""}, config_keys::kTop);
  if (!top.has("model")) top.fail_missing("model");
  config.job = top.get_choice("job", config.job, config_keys::kJobs);
  if (top.has("devices")) {
    config.devices = read_devices(src, top.value("devices"), top.anchor("devices"));
  } else {
    DeviceSpec cpu;
    cpu.name = "cpu:0";
    config.devices.push_back(cpu);
  }
  config.default_device = top.has("device_map") ? read_default_device(src, top.value("device_map"), config.devices)
                                                : config.devices.front().name;
  config.data = read_data(src, top.has("data") ? top.value("data") : YAML::Node());
  config.train = read_train(src, top.has("train") ? top.value("train") : YAML::Node());
  config.graph = build_model_graph(top.value("model"), src, config.job, config.devices, config.default_device);
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
