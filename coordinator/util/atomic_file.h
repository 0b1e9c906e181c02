// AtomicFile: a file that appears under its name only when complete. Text
// goes to "<path>.tmp-<pid>" beside it; commit() flushes, fsyncs and renames
// it over `path`. Destroyed uncommitted (a failure, an interruption), it
// removes the temporary file, so the old file at `path` stays as it was.
// Only a regular file (or no file) is renamed over: a character device
// (/dev/null), a FIFO or a link (/dev/stdout) is written where it is, and
// stays what it is.
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <string_view>

namespace devmap {

class AtomicFile {
 public:
  // Creates the temporary file (and `path`'s folder), removing those that
  // processes now gone left for `path` (a kill -9 mid-write). Throws devmap::Error
  // (kInvalidInput) with the system's reason when it cannot. `what` names
  // the file in messages ("predictions").
  AtomicFile(std::string path, std::string what);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  // Throws devmap::Error (kRuntime) with the system's reason when a write
  // failed or the file cannot be renamed into place.
  void commit();
  // Empty when the file is written in place (renames_into_place false).
  const std::string& temporary_path() const { return tmp_; }

  // The tag between a file's name and the writer's pid in its temporary's
  // name: "<path>.tmp-<pid>".
  static constexpr std::string_view kTemporaryTag = ".tmp-";
  // The writer's pid in a temporary's file name ("w.safetensors.tmp-42" ->
  // 42); nullopt when `file_name` is not a temporary's.
  static std::optional<int> temporary_owner(const std::string& file_name);
  // Whether `file_name` is a temporary whose writer (not this process) is gone.
  static bool is_abandoned_temporary(const std::string& file_name);
  // Removes "<path>.tmp-<pid>" files left by processes that are gone.
  static void remove_stale(const std::string& path);
  // Whether `path` is written through a temporary file renamed over it:
  // no file, or a regular file (not through a link).
  static bool renames_into_place(const std::string& path);

 private:
  std::string path_, what_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// Writes `text` to `path` through an AtomicFile.
void write_file_atomically(const std::string& path, const std::string& text, const std::string& what);

}  // namespace devmap
