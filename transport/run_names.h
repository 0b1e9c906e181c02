// The names a run's processes agree on without sending them: shared-memory
// segments and ipc socket paths derive from the run's prefix and directory.
#pragma once

#include <string>

namespace devmap {

// "devmap-<run id>-" + purpose: every segment of a run starts with the
// run's prefix, so it can be found (and cleaned) by run id.
inline std::string segment_name(const std::string& run_prefix, const std::string& purpose) {
  return run_prefix + purpose;
}
inline std::string edge_segment_name(const std::string& run_prefix, int edge) {
  return segment_name(run_prefix, "edge" + std::to_string(edge));
}

// The ipc socket on which `device`'s worker receives tensor handles
// ("node1/cpu:0" -> data-node1_cpu_0.sock: host names hold no '_').
inline std::string data_socket_path(const std::string& run_dir, const std::string& device) {
  std::string safe = device;
  for (char& c : safe)
    if (c == ':' || c == '/') c = '_';
  return run_dir + "/data-" + safe + ".sock";
}

// The file a run writes into its socket folder when it makes it, holding
// the run id: the proof that a folder named devmap-<run id> is a run's own
// (transport/run_cleanup.h removes nothing else).
inline std::string run_marker_path(const std::string& run_dir) {
  return run_dir + "/devmap-run";
}

}  // namespace devmap
