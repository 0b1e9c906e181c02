#include "coordinator/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "coordinator/run/host_stages.h"
#include "core/base/error.h"
#include "core/graph/safetensors.h"
#include "core/graph/split_op.h"
#include "transport/params_io.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;

// A tensor a worker holds, and where it lives in a file: the whole tensor
// `file` of shape `file_shape`, from element `offset` on. Only a part of an
// op split across devices (core/graph/split_op.h) holds less than the whole.
struct ParamRef {
  std::string name, device;  // the worker's name ("fc1/part0.weight") and device
  Shape shape;
  bool trained = true;  // false: op state (running statistics), without optimizer state
  FileDtype stored_as = FileDtype::kF32;
  std::string file;  // "fc1.weight"
  Shape file_shape;
  int64_t offset = 0;
};

// Every parameter and op state, under its "op.param" name, in the file under
// the whole op's.
std::vector<ParamRef> graph_params(const Graph& g) {
  std::vector<ParamRef> out;
  for (const Node& n : g.nodes())
    for (const ParamSpec& p : n.params) {
      WholeParam whole = whole_param(n, p);
      out.push_back({n.name + "." + p.name, n.device, p.shape, p.trained, p.stored_as, std::move(whole.name),
                     std::move(whole.shape), whole.offset});
    }
  return out;
}

// The bytes of `t` in `layout`'s data: its share of its file tensor.
struct ByteRange {
  uint64_t begin = 0, bytes = 0;
  FileDtype dtype = FileDtype::kF32;
};
ByteRange range_of(const SafetensorsLayout& layout, const ParamRef& t) {
  const SafetensorsEntry* e = layout.find(t.file);
  assert(e && "the layout holds every tensor's file tensor");
  const uint64_t element = (e->end - e->begin) / static_cast<uint64_t>(t.file_shape.numel());
  return {e->begin + static_cast<uint64_t>(t.offset) * element, static_cast<uint64_t>(t.shape.numel()) * element,
          e->dtype};
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw_runtime("cannot open " + path + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw_runtime("cannot fsync " + path + ": " + std::strerror(errno));
}

// Has this host's workers write or read their tensors of `layout` at `path`.
void params_io(WorkerGroup& workers, const std::vector<ParamRef>& tensors, const SafetensorsLayout& layout,
               ParamsIo::Op op, const std::string& path) {
  const HostStages* hosts = workers.hosts();
  std::map<std::string, ParamsIo> by_device;
  for (const ParamRef& t : tensors) {
    if (hosts && !hosts->local(t.device)) continue;
    const ByteRange r = range_of(layout, t);
    ParamsIo& io = by_device[t.device];
    io.op = op;
    io.path = path;
    io.entries.push_back({t.name, layout.data_start + r.begin, r.bytes, r.dtype});
  }
  std::map<std::string, std::string> frames;
  for (const auto& [device, io] : by_device)
    frames[device] = wire::frame(wire::MsgType::kParamsIo, std::string_view(encode_params_io(io)));
  workers.request(frames, wire::MsgType::kParamsDone,
                  std::string("the workers to ") + (op == ParamsIo::Op::kSave ? "write " : "read ") + path);
}

// A job across hosts: tensors move between byte ranges of the open file
// `fd` (named `path`) and another rank, in the tensors' order. Rank 0 moves
// the other hosts' tensors (each with its host's rank); another rank moves
// its own host's, with rank 0. kToFile: received and written; kFromFile:
// read and sent.
enum class RangeDirection { kToFile, kFromFile };
void move_ranges(const HostStages& hosts, const std::vector<ParamRef>& tensors, const SafetensorsLayout& layout, int fd,
                 const std::string& path, RangeDirection direction) {
  std::vector<char> buf;
  for (const ParamRef& t : tensors) {
    if (hosts.local(t.device) == (hosts.rank() == 0)) continue;
    const int peer = hosts.rank() == 0 ? hosts.rank_of(t.device) : 0;
    const ByteRange r = range_of(layout, t);
    buf.resize(r.bytes);
    const off_t at = static_cast<off_t>(layout.data_start + r.begin);
    if (direction == RangeDirection::kToFile) {
      hosts.recv(buf.data(), buf.size(), peer);
      if (::pwrite(fd, buf.data(), buf.size(), at) != static_cast<ssize_t>(buf.size()))
        throw_runtime("cannot write " + t.name + " into " + path + ": " + std::strerror(errno));
    } else {
      if (::pread(fd, buf.data(), buf.size(), at) != static_cast<ssize_t>(buf.size()))
        throw_runtime("cannot read " + t.name + " from " + path + ": " + std::strerror(errno));
      hosts.send(buf.data(), buf.size(), peer);
    }
  }
}

// Rank 0's side: the other hosts' tensors into or out of checkpoint `path`.
void move_remote_ranges(const HostStages& hosts, const std::vector<ParamRef>& tensors, const SafetensorsLayout& layout,
                        const std::string& path, RangeDirection direction) {
  int fd = ::open(path.c_str(), direction == RangeDirection::kToFile ? O_WRONLY : O_RDONLY);
  if (fd < 0) throw_runtime("cannot open " + path + ": " + std::strerror(errno));
  try {
    move_ranges(hosts, tensors, layout, fd, path, direction);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// The other side: this host's tensors through a scratch file laid out as
// the checkpoint is. kToFile: the workers write it and its ranges go to
// rank 0; kFromFile: rank 0's ranges fill it and the workers read it.
void exchange_local_ranges(WorkerGroup& workers, const std::vector<ParamRef>& tensors, const SafetensorsLayout& layout,
                           RangeDirection direction) {
  const HostStages& hosts = *workers.hosts();
  const std::string scratch =
      (fs::temp_directory_path() / ("devmap-checkpoint-part-" + std::to_string(::getpid()))).string();
  int fd = ::open(scratch.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw_runtime("cannot create " + scratch + ": " + std::strerror(errno));
  try {
    if (::ftruncate(fd, static_cast<off_t>(layout.data_start + layout.data_bytes)) != 0)
      throw_runtime("cannot size " + scratch + ": " + std::strerror(errno));
    if (direction == RangeDirection::kToFile) {
      params_io(workers, tensors, layout, ParamsIo::Op::kSave, scratch);
      move_ranges(hosts, tensors, layout, fd, scratch, RangeDirection::kFromFile);
    } else {
      move_ranges(hosts, tensors, layout, fd, scratch, RangeDirection::kToFile);
      params_io(workers, tensors, layout, ParamsIo::Op::kLoad, scratch);
    }
  } catch (...) {
    ::close(fd);
    ::unlink(scratch.c_str());
    throw;
  }
  ::close(fd);
  ::unlink(scratch.c_str());
}

SafetensorsLayout layout_of(const std::vector<ParamRef>& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsTensor> list;
  for (const ParamRef& t : tensors)
    if (t.offset == 0) list.push_back({t.file, t.file_shape, t.stored_as});  // the first part, or the whole
  return make_safetensors_layout(list, metadata);
}

// Writes `tensors` (name -> device, shape) into `path` atomically: the
// workers fill their ranges of a temporary file that is then renamed. In a
// job across hosts, rank 0 writes the file and the other ranks send their
// hosts' tensors to it (`path` is rank 0's).
void write_file(WorkerGroup& workers, const std::vector<ParamRef>& tensors, const std::string& path,
                const std::map<std::string, std::string>& metadata) {
  SafetensorsLayout layout = layout_of(tensors, metadata);
  const HostStages* hosts = workers.hosts();
  if (hosts && hosts->rank() != 0) return exchange_local_ranges(workers, tensors, layout, RangeDirection::kToFile);
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
    params_io(workers, tensors, layout, ParamsIo::Op::kSave, tmp);
    if (hosts) move_remote_ranges(*hosts, tensors, layout, tmp, RangeDirection::kToFile);
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
      slots.push_back({p.name + ".opt" + std::to_string(k), p.device, p.shape, true, FileDtype::kF32,
                       p.file + ".opt" + std::to_string(k), p.file_shape, p.offset});
  return slots;
}

std::string encode_metadata(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) out += k + '\0' + v + '\0';
  return out;
}

std::map<std::string, std::string> decode_metadata(const std::string& bytes) {
  std::map<std::string, std::string> m;
  for (size_t at = 0; at < bytes.size();) {
    const size_t k_end = bytes.find('\0', at);
    const size_t v_end = k_end == std::string::npos ? k_end : bytes.find('\0', k_end + 1);
    if (v_end == std::string::npos) throw_runtime("malformed checkpoint metadata from rank 0");
    m[bytes.substr(at, k_end - at)] = bytes.substr(k_end + 1, v_end - k_end - 1);
    at = v_end + 1;
  }
  return m;
}

// Validates `path` against `tensors` (every one present with its shape,
// nothing extra) and has the workers read them; returns its metadata. In a
// job across hosts, rank 0 reads the file and sends the other hosts their
// tensors and the metadata (`path` is rank 0's).
std::map<std::string, std::string> load_tensors(WorkerGroup& workers, const std::vector<ParamRef>& tensors,
                                                const std::string& path, const char* what) {
  const HostStages* hosts = workers.hosts();
  if (hosts && hosts->rank() != 0) {
    exchange_local_ranges(workers, tensors, layout_of(tensors, {}), RangeDirection::kFromFile);
    return decode_metadata(hosts->from_rank0(""));
  }
  SafetensorsLayout layout = read_safetensors_layout(path);
  for (const ParamRef& p : tensors) {
    const SafetensorsEntry* e = layout.find(p.file);
    if (!e) throw_invalid(path + ": missing tensor '" + p.file + "' that the " + what + " needs");
    if (e->shape != p.file_shape)
      throw_invalid(path + ": tensor '" + p.file + "' has shape " + e->shape.to_string() + ", the " + what + "'s is " +
                    p.file_shape.to_string());
    // A count may come as F32 too (weights files of devmap before it wrote I64).
    if (e->dtype != p.stored_as && e->dtype != FileDtype::kF32)
      throw_invalid(path + ": tensor '" + p.file + "' has dtype " + file_dtype_name(e->dtype) + ", the " + what +
                    "'s is " + file_dtype_name(p.stored_as));
    if (e->dtype != p.stored_as && hosts && !hosts->local(p.device))
      throw_invalid(path + ": tensor '" + p.file + "' is stored as " + file_dtype_name(e->dtype) +
                    " (an earlier devmap's file) and its device " + p.device +
                    " is on another host: resume it once on one host, whose checkpoints store it as " +
                    file_dtype_name(p.stored_as));
  }
  for (const SafetensorsEntry& e : layout.entries) {
    bool known = false;
    for (const ParamRef& p : tensors) known = known || p.file == e.name;
    if (!known) throw_invalid(path + ": tensor '" + e.name + "' is not part of this " + what);
  }
  params_io(workers, tensors, layout, ParamsIo::Op::kLoad, path);
  if (hosts) {
    move_remote_ranges(*hosts, tensors, layout, path, RangeDirection::kFromFile);
    hosts->from_rank0(encode_metadata(layout.metadata));
  }
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
              {"split", state.split},
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
  if (auto split = meta.find("split"); split != meta.end()) s.split = split->second;
  if (metadata_int(weights_meta, "step", weights_path) != s.step)
    throw_invalid(weights_path + " and " + state_path +
                  " are from different steps (a save was interrupted): " + "resume from an earlier checkpoint");
  return s;
}

}  // namespace devmap
