#include "coordinator/run/run_outputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>

#include "coordinator/plan/step_costs.h"
#include "coordinator/util/atomic_file.h"
#include "core/base/error.h"

namespace devmap {

namespace fs = std::filesystem;

RunOutputs resolve_run_outputs(const Config& config, const RunOptions& options, bool training) {
  const std::string stem = fs::path(config.path).stem().string();
  const fs::path out_dir(options.out_dir);
  RunOutputs o;
  if (training) {
    if (!config.train.checkpoint.empty())
      o.checkpoint = config.train.checkpoint;
    else
      o.checkpoint = ((options.out_dir.empty() ? fs::path("checkpoints") : out_dir) / (stem + ".safetensors")).string();
  }
  if (!options.metrics_path.empty()) {
    o.metrics = options.metrics_path;
  } else if (!options.out_dir.empty()) {
    o.metrics = (out_dir / "metrics.jsonl").string();
  } else {
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    o.metrics = "runs/" + stem + "/" + stamp + "-" + std::to_string(::getpid()) + "/metrics.jsonl";
  }
  const fs::path m(o.metrics);
  o.config_copy = (m.parent_path() / (m.stem().string() + ".config.yaml")).string();
  return o;
}

namespace {

struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

std::string lexical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return p.lexically_normal().string();
}

bool same_file(const std::string& a, const std::string& b) {
  auto ia = file_id(a), ib = file_id(b);
  if (ia && ib) return *ia == *ib;
  return lexical(a) == lexical(b);
}

std::string quoted(const RunFile& f) {
  return f.role + " '" + f.path + "'";
}

// Creates and removes a file in the nearest existing folder of `path`.
void check_writable(const RunFile& out) {
  fs::path dir = fs::path(out.path).parent_path();
  std::error_code ec;
  if (dir.empty()) dir = ".";
  while (!fs::exists(dir, ec) && dir != ".") {
    const fs::path up = dir.parent_path();
    dir = up.empty() || up == dir ? fs::path(".") : up;
  }
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw_invalid("cannot write " + quoted(out) + ": '" + dir.string() + "' is a file, not a folder");
  const std::string probe = (dir / (".devmap-probe-" + std::to_string(::getpid()))).string();
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw_invalid("cannot write " + quoted(out) + ": cannot create a file in folder '" + dir.string() +
                  "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

// What an existing file with this name holds, for the files an output of
// another kind must never replace (weights, configs, caches); empty: a file
// any output may replace.
std::string kind_held(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".safetensors") return "weights";
  if (ext == ".yaml" || ext == ".yml") return "a config";
  if (ext == ".tsv") return "a table (calibration and peak caches are .tsv)";
  if (ext == ".gz" || ext == ".npy" || ext == ".npz" || ext == ".idx") return "data";
  return "";
}

// Whether output `role` writes files of kind `kind` (kind_held).
bool role_writes(const std::string& role, const std::string& kind) {
  if (kind == "weights") return role == "train.checkpoint";
  if (kind == "a config") return role == "resolved config" || role == "--emit-map";
  return role == "calibration cache";
}

}  // namespace

void check_run_files(const RunFiles& files) {
  std::error_code ec;
  for (size_t i = 0; i < files.outputs.size(); ++i) {
    const RunFile& out = files.outputs[i];
    if (fs::is_directory(out.path, ec))
      throw_invalid("cannot write " + quoted(out) + ": it is a folder; name a file (inside it, for example)");
    for (const RunFile& in : files.inputs)
      if (same_file(out.path, in.path))
        throw_invalid(quoted(out) + " is the same file as " + quoted(in) +
                      ": the run would overwrite what it reads; name another file");
    for (size_t j = 0; j < i; ++j) {
      const RunFile& other = files.outputs[j];
      if (other.role != out.role && same_file(out.path, other.path))
        throw_invalid(quoted(out) + " is the same file as " + quoted(other) +
                      ": one would overwrite the other; name another file");
    }
  }
  // Then what each output would replace.
  for (const RunFile& out : files.outputs) {
    if (out.role == "train.checkpoint" && !AtomicFile::renames_into_place(out.path))
      throw_invalid(quoted(out) +
                    " is not a regular file: a checkpoint is written beside it and renamed into its "
                    "place, which would replace it; name a file");
    if (const std::string kind = kind_held(out.path);
        !kind.empty() && fs::is_regular_file(out.path, ec) && !role_writes(out.role, kind))
      throw_invalid(quoted(out) + " exists and its name says it holds " + kind + ", which " + out.role +
                    " would replace: name another file");
    check_writable(out);
  }
}

RunFiles run_files(const Config& config, const RunOutputs& outputs, const RunOptions& options) {
  RunFiles f = plan_files(config, options);
  f.outputs.push_back({"metrics file", outputs.metrics});
  f.outputs.push_back({"resolved config", outputs.config_copy});
  return f;
}

RunFiles plan_files(const Config& config, const RunOptions& options) {
  RunFiles f;
  f.inputs.push_back({"config", config.path});
  f.inputs.push_back({"calibration cache", calibration_path(options)});
  return f;
}

void print_run_outputs(const RunOutputs& outputs, std::ostream& log) {
  log << "devmap: outputs:";
  if (!outputs.checkpoint.empty()) log << " checkpoint " << outputs.checkpoint << ",";
  log << " metrics " << outputs.metrics << ", resolved config " << outputs.config_copy << "\n";
}

}  // namespace devmap
