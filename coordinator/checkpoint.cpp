#include "coordinator/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/safetensors.h"
#include "transport/params_io.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;

struct ParamRef {
  std::string name, device;
  Shape shape;
  bool trained = true;  // false: op state (running statistics), without optimizer state
  FileDtype stored_as = FileDtype::kF32;
};

// Every parameter and op state, under its "op.param" name.
std::vector<ParamRef> graph_params(const Graph& g) {
  std::vector<ParamRef> out;
  for (const Node& n : g.nodes())
    for (const ParamSpec& p : n.params)
      out.push_back({n.name + "." + p.name, n.device, p.shape, p.trained, p.stored_as});
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
  std::vector<SafetensorsTensor> list;
  for (const ParamRef& t : tensors) list.push_back({t.name, t.shape, t.stored_as});
  SafetensorsLayout layout = make_safetensors_layout(list, metadata);
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw_invalid("cannot write checkpoint " + tmp + ": " + std::strerror(errno));
  const std::string head = safetensors_head(layout);
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
      io.entries.push_back({t.name, layout.data_start + e->begin, e->end - e->begin, e->dtype});
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

std::string checkpoint_base(const std::string& weights_path) {
  const std::string ext = ".safetensors";
  return weights_path.size() > ext.size() && weights_path.ends_with(ext)
             ? weights_path.substr(0, weights_path.size() - ext.size())
             : weights_path;
}

std::string state_path_for(const std::string& weights_path) {
  return checkpoint_base(weights_path) + ".state.safetensors";
}

namespace {

std::vector<ParamRef> state_tensors(const std::vector<ParamRef>& params, const OptimizerConfig& optimizer) {
  std::vector<ParamRef> slots;
  for (const ParamRef& p : params)
    for (int k = 0; p.trained && k < optimizer_state_count(optimizer.kind); ++k)
      slots.push_back({p.name + ".opt" + std::to_string(k), p.device, p.shape});
  return slots;
}

// Validates `path` against `tensors` (every one present with its shape,
// nothing extra) and has the workers read them; returns its metadata.
std::map<std::string, std::string> load_tensors(WorkerGroup& workers, const std::vector<ParamRef>& tensors,
                                                const std::string& path, const char* what) {
  SafetensorsLayout layout = read_safetensors_layout(path);
  std::map<std::string, ParamsIo> by_device;
  for (const ParamRef& p : tensors) {
    const SafetensorsEntry* e = layout.find(p.name);
    if (!e) throw_invalid(path + ": missing tensor '" + p.name + "' that the " + what + " needs");
    if (e->shape != p.shape)
      throw_invalid(path + ": tensor '" + p.name + "' has shape " + e->shape.to_string() + ", the " + what + "'s is " +
                    p.shape.to_string());
    // A count may come as F32 too (weights files of devmap before it wrote I64).
    if (e->dtype != p.stored_as && e->dtype != FileDtype::kF32)
      throw_invalid(path + ": tensor '" + p.name + "' has dtype " + file_dtype_name(e->dtype) + ", the " + what +
                    "'s is " + file_dtype_name(p.stored_as));
    ParamsIo& io = by_device[p.device];
    io.op = ParamsIo::Op::kLoad;
    io.path = path;
    io.entries.push_back({p.name, layout.data_start + e->begin, e->end - e->begin, e->dtype});
  }
  for (const SafetensorsEntry& e : layout.entries) {
    bool known = false;
    for (const ParamRef& p : tensors) known = known || p.name == e.name;
    if (!known) throw_invalid(path + ": tensor '" + e.name + "' is not part of this " + what);
  }
  std::map<std::string, std::string> frames;
  for (const auto& [device, io] : by_device)
    frames[device] = wire::frame(wire::MsgType::kParamsIo, std::string_view(encode_params_io(io)));
  workers.request(frames, wire::MsgType::kParamsDone, "the workers to read " + path);
  return layout.metadata;
}

int64_t metadata_int(const std::map<std::string, std::string>& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  if (it == m.end() || it->second.empty() || it->second.find_first_not_of("0123456789") != std::string::npos)
    throw_invalid(path + ": metadata '" + key + "' is missing or not a number: not a devmap training state");
  return std::stoll(it->second);
}

}  // namespace

void save_checkpoint(WorkerGroup& workers, const Graph& graph, const OptimizerConfig& optimizer,
                     const std::string& weights_path, const TrainingState& state) {
  std::vector<ParamRef> params = graph_params(graph);
  // The state is written first: a run stopped between the two renames
  // leaves weights and state whose steps disagree, which resuming refuses.
  write_file(workers, state_tensors(params, optimizer), state_path_for(weights_path),
             {{"step", std::to_string(state.step)},
              {"epoch", std::to_string(state.epoch)},
              {"seed", std::to_string(state.seed)},
              {"optimizer", optimizer_kind_name(optimizer.kind)}});
  write_file(workers, params, weights_path,
             {{"format", "pt"}, {"producer", "devmap"}, {"step", std::to_string(state.step)}});
}

std::vector<std::string> nonfinite_tensors(const std::string& path) {
  SafetensorsLayout layout = read_safetensors_layout(path);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_invalid("cannot read " + path + ": " + std::strerror(errno));
  std::vector<std::string> bad;
  std::vector<float> data;
  for (const SafetensorsEntry& e : layout.entries) {
    if (e.dtype != FileDtype::kF32) continue;  // integers are always finite
    data.resize((e.end - e.begin) / sizeof(float));
    f.seekg(static_cast<std::streamoff>(layout.data_start + e.begin));
    f.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
    if (!f) throw_invalid("cannot read tensor '" + e.name + "' of " + path);
    for (float v : data)
      if (!std::isfinite(v)) {
        bad.push_back(e.name);
        break;
      }
  }
  return bad;
}

void load_weights(WorkerGroup& workers, const Graph& graph, const std::string& weights_path) {
  load_tensors(workers, graph_params(graph), weights_path, "model");
}

TrainingState load_checkpoint(WorkerGroup& workers, const Graph& graph, const OptimizerConfig& optimizer,
                              const std::string& weights_path) {
  const std::string state_path = state_path_for(weights_path);
  std::vector<ParamRef> params = graph_params(graph);
  auto weights_meta = load_tensors(workers, params, weights_path, "model");
  auto meta = load_tensors(workers, state_tensors(params, optimizer), state_path, "training state");
  auto kind = meta.find("optimizer");
  if (kind == meta.end() || kind->second != optimizer_kind_name(optimizer.kind))
    throw_invalid(state_path + ": saved with optimizer '" + (kind == meta.end() ? "?" : kind->second) +
                  "', but the config's is '" + optimizer_kind_name(optimizer.kind) + "'");
  TrainingState s;
  s.step = metadata_int(meta, "step", state_path);
  s.epoch = metadata_int(meta, "epoch", state_path);
  s.seed = static_cast<uint64_t>(metadata_int(meta, "seed", state_path));
  if (metadata_int(weights_meta, "step", weights_path) != s.step)
    throw_invalid(weights_path + " and " + state_path +
                  " are from different steps (a save was interrupted): " + "resume from an earlier checkpoint");
  return s;
}

}  // namespace devmap
