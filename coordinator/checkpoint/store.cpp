#include "coordinator/checkpoint/store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "coordinator/checkpoint/checkpoint.h"
#include "coordinator/util/atomic_file.h"
#include "core/base/error.h"
#include "core/graph/safetensors.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;

const std::string kExt = ".safetensors";
const std::string kStepTag = ".step-";

// "123" -> 123; nullopt for anything but a plain decimal.
std::optional<int64_t> parse_step(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

}  // namespace

CheckpointStore::CheckpointStore(std::string path, int64_t keep) : path_(std::move(path)), keep_(keep) {
  base_ = checkpoint_base(path_);
  fs::path p(base_);
  dir_ = p.has_parent_path() ? p.parent_path().string() : ".";
  stem_ = p.filename().string();
}

std::string CheckpointStore::weights_for(int64_t step) const {
  return base_ + kStepTag + std::to_string(step) + kExt;
}

std::vector<CheckpointFiles> CheckpointStore::list() const {
  std::vector<CheckpointFiles> out;
  std::error_code ec;
  const std::string prefix = stem_ + kStepTag;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !name.ends_with(kExt)) continue;
    auto step = parse_step(name.substr(prefix.size(), name.size() - prefix.size() - kExt.size()));
    if (!step) continue;  // a state file, or not ours
    std::string weights = weights_for(*step);
    out.push_back({*step, weights, state_path_for(weights)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  if (out.empty() && fs::exists(path_, ec)) out.push_back({-1, path_, state_path_for(path_)});
  return out;
}

std::optional<std::string> CheckpointStore::problem(const CheckpointFiles& c) {
  std::error_code ec;
  if (!fs::exists(c.state, ec)) return "its training state " + c.state + " is missing";
  try {
    SafetensorsLayout w = read_safetensors_layout(c.weights);
    SafetensorsLayout s = read_safetensors_layout(c.state);
    for (const auto* l : {&w, &s}) {
      const std::string& file = l == &w ? c.weights : c.state;
      uint64_t size = fs::file_size(file, ec);
      if (ec || size != l->data_start + l->data_bytes)
        return file + " is " + std::to_string(size) + " bytes, its header describes " +
               std::to_string(l->data_start + l->data_bytes);
    }
    auto ws = w.metadata.find("step"), ss = s.metadata.find("step");
    if (ws == w.metadata.end() || ss == s.metadata.end()) return "a file has no step in its metadata";
    if (ws->second != ss->second)
      return "the weights are from step " + ws->second + " and the state from step " + ss->second;
    if (c.step >= 0 && ws->second != std::to_string(c.step))
      return c.weights + " holds step " + ws->second + ", not " + std::to_string(c.step);
  } catch (const Error& e) {
    return e.what();
  }
  return std::nullopt;
}

std::optional<CheckpointFiles> CheckpointStore::latest_valid(std::ostream& log) const {
  for (const CheckpointFiles& c : list()) {
    if (auto why = problem(c)) {
      log << "devmap: skipping checkpoint " << c.weights << ": " << *why << "\n";
      continue;
    }
    return c;
  }
  return std::nullopt;
}

void CheckpointStore::discard(int64_t step) const {
  std::error_code ec;
  fs::remove(weights_for(step), ec);
  fs::remove(state_path_for(weights_for(step)), ec);
}

void CheckpointStore::adopt_existing() {
  for (const CheckpointFiles& c : list())
    if (c.step >= 0) written_.insert(c.step);
}

void CheckpointStore::point_newest_at(const std::string& target, const std::string& name) const {
  // A hard link under a temporary name, renamed over the newest name: a
  // reader sees the old file or the new one, never a partial one.
  std::string tmp = name + ".tmp-" + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  if (::link(target.c_str(), tmp.c_str()) != 0) {
    std::error_code ec;
    if (!fs::copy_file(target, tmp, fs::copy_options::overwrite_existing, ec))
      throw_runtime("cannot link or copy " + target + " to " + tmp + ": " + ec.message());
  }
  if (::rename(tmp.c_str(), name.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_runtime("cannot rename " + tmp + " to " + name + ": " + std::strerror(err));
  }
}

void CheckpointStore::commit(int64_t step) {
  const std::string weights = weights_for(step);
  // The state first: between the two renames the newest names disagree on
  // the step, which resuming detects; the step files are whole either way.
  point_newest_at(state_path_for(weights), state_path_for(path_));
  point_newest_at(weights, path_);
  written_.insert(step);
  // Keep the newest `keep` of this run's checkpoints; a checkpoint from an
  // earlier run that this one did not resume from goes too, so that the
  // newest step on disk is always this run's.
  std::vector<int64_t> mine(written_.rbegin(), written_.rend());
  std::set<int64_t> kept(mine.begin(), mine.begin() + std::min<size_t>(mine.size(), static_cast<size_t>(keep_)));
  std::error_code ec;
  for (const CheckpointFiles& c : list()) {
    if (c.step < 0 || kept.count(c.step)) continue;
    fs::remove(c.weights, ec);
    fs::remove(c.state, ec);
    written_.erase(c.step);
  }
  // State files whose weights never arrived (a failure between the two
  // writes): every one but those of kept steps.
  const std::string step_prefix = stem_ + kStepTag, state_ext = ".state" + kExt;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(step_prefix, 0) != 0 || !name.ends_with(state_ext)) continue;
    auto s = parse_step(name.substr(step_prefix.size(), name.size() - step_prefix.size() - state_ext.size()));
    if (s && !kept.count(*s) && !fs::exists(weights_for(*s), ec)) fs::remove(entry.path(), ec);
  }
  // Temporary files of writers that died mid-write.
  const std::string prefix = stem_ + ".";
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && AtomicFile::is_abandoned_temporary(name)) fs::remove(entry.path(), ec);
  }
}

}  // namespace devmap
