#include "transport/run_cleanup.h"

#include <filesystem>

#include "transport/shm_segment.h"

namespace devmap {

std::vector<std::string> remove_run_files(const std::string& segment_prefix, const std::string& run_dir,
                                          const std::string& shm_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  if (!segment_prefix.empty())
    for (const auto& entry : fs::directory_iterator(shm_dir, ec)) {
      std::string name = entry.path().filename().string();
      if (name.rfind(segment_prefix, 0) == 0 && ShmSegment::remove(name)) removed.push_back(entry.path().string());
    }
  if (!run_dir.empty() && fs::remove_all(run_dir, ec) > 0) removed.push_back(run_dir);
  return removed;
}

}  // namespace devmap
