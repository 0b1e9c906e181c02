// CalibrationCache: op and transfer times measured on this machine by
// `coordinator calibrate` (coordinator/jobs/calibrate_job.h), kept in a text
// file between runs. Each entry is keyed by what makes a time valid:
//  - a device key: the machine (CPU model, logical cores, the BLAS
//    environment), devmap's version and worker build (the worker program's
//    size and modification time), the worker's own description of its
//    libraries (`worker_cpu --describe`), the device kind and its threads;
//  - for ops, the op's signature (kind, attributes, per-sample input and
//    output shapes, which inputs are data) and the batch;
//  - for transfers, the pair of device kinds.
// A change to any of them misses the cache, so a plan never uses a time
// measured for other hardware, libraries or code.
//
// The file: "# devmap calibration v1" and one tab-separated line per entry:
//   op        DEVICE_KEY  SIGNATURE  BATCH  FORWARD_S  BACKWARD_S
//   optimizer DEVICE_KEY  OPTIMIZER  SECONDS_PER_PARAMETER
//   link      MACHINE_KEY FROM->TO   LATENCY_S  BYTES_PER_S
//   rate      DEVICE_KEY  FLOPS_PER_S   (the device's rate over a whole model)
//   step      DEVICE_KEY  SECONDS       (what a step costs besides its ops and
//             update: the STEP round trip, the input, the loss)
//   contention DEVICES_KEY FACTOR       (the CPU devices' slowdown of each
//             other: ScheduleRequest::contention; the key covers every
//             CPU device's key, see contention_key)
// Keys are FNV-1a hashes (hex) of their text; later lines replace earlier
// ones with the same key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "core/graph/graph.h"
#include "core/plan/cost_model.h"
#include "core/plan/step_time.h"

namespace devmap {

// Where the cache lives: $DEVMAP_CALIBRATION_CACHE, else
// $XDG_CACHE_HOME/devmap/calibration.tsv, else
// ~/.cache/devmap/calibration.tsv.
std::string default_calibration_path();

// 16 hex digits of FNV-1a 64 over `text`.
std::string key_hash(const std::string& text);

// What an op's time depends on besides the device and the batch.
std::string op_signature(const Graph& graph, int node);

class CalibrationCache {
 public:
  // Reads `path`; a missing file is an empty cache. Throws devmap::Error
  // (kInvalidInput) naming the line of a malformed entry.
  static CalibrationCache load(const std::string& path);
  // The most entries a saved file keeps, and the largest file load() reads
  // (a file of that many entries is a fraction of it).
  static constexpr size_t kMaxEntries = 20000;
  static constexpr uint64_t kMaxFileBytes = 16 << 20;

  // Writes every entry to `path` atomically (creating its folder), merged
  // under a lock on its folder over what the file holds by then: two
  // calibrations saving at once keep both's entries. Throws
  // devmap::Error with the system's reason when it cannot write.
  // Past kMaxEntries, only the keys this cache measured (put) stay: keys
  // change with every worker build, so the others are mostly stale.
  void save(const std::string& path) const;

  std::optional<OpSeconds> op(const std::string& device_key, const std::string& signature, int64_t batch) const;
  // Every measured batch of one op signature on one device.
  std::map<int64_t, OpSeconds> op_sizes(const std::string& device_key, const std::string& signature) const;
  void put_op(const std::string& device_key, const std::string& signature, int64_t batch, OpSeconds s);
  std::optional<double> optimizer(const std::string& device_key, const std::string& optimizer) const;
  void put_optimizer(const std::string& device_key, const std::string& optimizer, double seconds_per_param);
  std::optional<double> rate(const std::string& device_key) const;
  void put_rate(const std::string& device_key, double flops_per_s);
  std::optional<LinkCost> link(const std::string& machine_key, const std::string& from_kind,
                               const std::string& to_kind) const;
  void put_link(const std::string& machine_key, const std::string& from_kind, const std::string& to_kind,
                LinkCost cost);
  std::optional<double> step_overhead(const std::string& device_key) const;
  void put_step_overhead(const std::string& device_key, double seconds);
  std::optional<double> contention(const std::string& devices_key) const;
  void put_contention(const std::string& devices_key, double contention);

  size_t size() const {
    return ops_.size() + optimizers_.size() + links_.size() + rates_.size() + step_overhead_.size() +
           contention_.size();
  }

 private:
  void merge_into(CalibrationCache& older) const;     // this cache's entries over older's
  void keep_only(const std::set<std::string>& keys);  // drops the entries of other keys
  void write(const std::string& path) const;          // atomically, as it is
  std::map<std::tuple<std::string, std::string, int64_t>, OpSeconds> ops_;
  std::map<std::pair<std::string, std::string>, double> optimizers_;
  std::map<std::pair<std::string, std::string>, LinkCost> links_;
  std::map<std::string, double> rates_;
  std::map<std::string, double> step_overhead_;
  std::map<std::string, double> contention_;
  std::set<std::string> measured_keys_;  // the device, machine and devices keys put here
};

}  // namespace devmap
