#include "coordinator/plan/shared_memory.h"

#include <sys/statvfs.h>

#include "coordinator/util/json_writer.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "transport/edge_plan.h"

namespace devmap {

std::string SharedMemoryPlan::parts() const {
  return format_byte_parts(
      {{"input slots", input_slots}, {"output slots", output_slots}, {"edge slot rings", edge_rings}});
}

int64_t shared_memory_free(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return -1;
  return static_cast<int64_t>(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize);
}

uint64_t edge_ring_bytes(const Partition& partition, int64_t max_batch, const std::vector<int>& slots) {
  uint64_t total = 0;
  for (const ChannelEdge& e : channel_edges(partition, "", max_batch, "", slots)) total += e.ring_bytes();
  return total;
}

std::string shared_memory_json(const SharedMemoryPlan& m) {
  auto i64 = [](uint64_t v) { return static_cast<int64_t>(v); };
  JsonObject j;
  j.add("total_bytes", i64(m.total())).add("limit_bytes", i64(m.limit));
  j.add("input_slots_bytes", i64(m.input_slots)).add("output_slots_bytes", i64(m.output_slots));
  j.add("edge_rings_bytes", i64(m.edge_rings));
  return j.str();
}

void check_shared_memory(const SharedMemoryPlan& m, const std::string& config_path) {
  const std::string what = "the run needs " + format_bytes(m.total()) + " of shared memory (" + m.parts() + ")";
  const std::string fix =
      "use a smaller batch (train.batch_size, predict --batch) or a device memory_limit that "
      "splits it into micro-batches";
  if (m.limit > 0 && m.total() > m.limit)
    throw_invalid(config_path + ": " + what + " but coordinator.shared_memory_limit is " + format_bytes(m.limit) +
                  ": raise it, or " + fix);
  const int64_t free = shared_memory_free();
  if (free >= 0 && m.total() > static_cast<uint64_t>(free))
    throw_invalid(config_path + ": " + what + " but " + kSharedMemoryDir + " has " +
                  format_bytes(static_cast<uint64_t>(free)) +
                  " free: give the machine or container more (docker run --shm-size=SIZE), or " + fix);
}

}  // namespace devmap
