#include "coordinator/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/safetensors.h"
#include "transport/params_io.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;

struct ParamRef {
  std::string name, device;
  Shape shape;
};

std::vector<ParamRef> graph_params(const Graph& g) {
  std::vector<ParamRef> out;
  for (const Node& n : g.nodes())
    for (const ParamSpec& p : n.params) out.push_back({n.name + "." + p.name, n.device, p.shape});
  return out;
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw_runtime("cannot open " + path + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw_runtime("cannot fsync " + path + ": " + std::strerror(errno));
}

// Writes `tensors` (name -> device, shape) into `path` atomically: the
// workers fill their ranges of a temporary file that is then renamed.
void write_file(WorkerGroup& workers, const std::vector<ParamRef>& tensors, const std::string& path,
                const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, Shape>> list;
  for (const ParamRef& t : tensors) list.emplace_back(t.name, t.shape);
  SafetensorsLayout layout = make_safetensors_layout(list, metadata);
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw_invalid("cannot write checkpoint " + tmp + ": " + std::strerror(errno));
  std::string head(8, '\0');
  uint64_t n = layout.header.size();
  for (int i = 0; i < 8; ++i) head[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  head += layout.header;
  bool ok = ::write(fd, head.data(), head.size()) == static_cast<ssize_t>(head.size()) &&
            ::ftruncate(fd, static_cast<off_t>(layout.data_start + layout.data_bytes)) == 0;
  ::close(fd);
  try {
    if (!ok) throw_runtime("cannot write checkpoint " + tmp + ": " + std::strerror(errno));
    std::map<std::string, ParamsIo> by_device;
    for (const ParamRef& t : tensors) {
      const SafetensorsEntry* e = layout.find(t.name);
      ParamsIo& io = by_device[t.device];
      io.op = ParamsIo::Op::kSave;
      io.path = tmp;
      io.entries.push_back({t.name, layout.data_start + e->begin, e->end - e->begin});
    }
    std::map<std::string, std::string> frames;
    for (const auto& [device, io] : by_device)
      frames[device] = wire::frame(wire::MsgType::kParamsIo, std::string_view(encode_params_io(io)));
    workers.request(frames, wire::MsgType::kParamsDone, "the workers to write " + path);
    fsync_path(tmp, O_RDONLY);
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw_runtime("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_path(target.has_parent_path() ? target.parent_path().string() : ".", O_RDONLY | O_DIRECTORY);
}

}  // namespace

std::string state_path_for(const std::string& weights_path) {
  const std::string ext = ".safetensors";
  std::string base = weights_path.size() > ext.size() && weights_path.ends_with(ext)
                         ? weights_path.substr(0, weights_path.size() - ext.size())
                         : weights_path;
  return base + ".state.safetensors";
}

int optimizer_state_count(const OptimizerConfig& optimizer) {
  switch (optimizer.kind) {
    case OptimizerConfig::Kind::kSgd: return 0;
    case OptimizerConfig::Kind::kMomentum: return 1;
    case OptimizerConfig::Kind::kAdam: return 2;
  }
  return 0;
}

void save_checkpoint(WorkerGroup& workers, const Graph& graph, const OptimizerConfig& optimizer,
                     const std::string& weights_path, const TrainingState& state) {
  std::vector<ParamRef> params = graph_params(graph);
  write_file(workers, params, weights_path, {{"format", "pt"}, {"producer", "devmap"}});
  std::vector<ParamRef> slots;
  for (const ParamRef& p : params)
    for (int k = 0; k < optimizer_state_count(optimizer); ++k)
      slots.push_back({p.name + ".opt" + std::to_string(k), p.device, p.shape});
  write_file(workers, slots, state_path_for(weights_path),
             {{"step", std::to_string(state.step)},
              {"epoch", std::to_string(state.epoch)},
              {"seed", std::to_string(state.seed)},
              {"optimizer", optimizer_kind_name(optimizer.kind)}});
}

void load_weights(WorkerGroup& workers, const Graph& graph, const std::string& weights_path) {
  SafetensorsLayout layout = read_safetensors_layout(weights_path);
  std::vector<ParamRef> params = graph_params(graph);
  std::map<std::string, ParamsIo> by_device;
  for (const ParamRef& p : params) {
    const SafetensorsEntry* e = layout.find(p.name);
    if (!e) throw_invalid(weights_path + ": missing tensor '" + p.name + "' that the model needs");
    if (e->shape != p.shape)
      throw_invalid(weights_path + ": tensor '" + p.name + "' has shape " + e->shape.to_string() + ", the model's is " +
                    p.shape.to_string());
    ParamsIo& io = by_device[p.device];
    io.op = ParamsIo::Op::kLoad;
    io.path = weights_path;
    io.entries.push_back({p.name, layout.data_start + e->begin, e->end - e->begin});
  }
  for (const SafetensorsEntry& e : layout.entries) {
    bool known = false;
    for (const ParamRef& p : params) known = known || p.name == e.name;
    if (!known) throw_invalid(weights_path + ": tensor '" + e.name + "' is not a parameter of this model");
  }
  std::map<std::string, std::string> frames;
  for (const auto& [device, io] : by_device)
    frames[device] = wire::frame(wire::MsgType::kParamsIo, std::string_view(encode_params_io(io)));
  workers.request(frames, wire::MsgType::kParamsDone, "the workers to read " + weights_path);
}

}  // namespace devmap
