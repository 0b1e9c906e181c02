#include "coordinator/plan/coordinator_memory.h"

#include <algorithm>

#include "coordinator/util/json_writer.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"

namespace devmap {

std::string CoordinatorMemory::parts() const {
  return format_byte_parts({{"training and test labels and orders", datasets},
                            {"input reader", input_reader},
                            {"input slots", input_slots},
                            {"output slots", output_slots}});
}

std::string coordinator_memory_json(const CoordinatorMemory& m) {
  auto i64 = [](uint64_t v) { return static_cast<int64_t>(v); };
  JsonObject j;
  j.add("total_bytes", i64(m.total())).add("limit_bytes", i64(m.limit)).add("datasets_bytes", i64(m.datasets));
  j.add("input_reader_bytes", i64(m.input_reader)).add("input_slots_bytes", i64(m.input_slots));
  j.add("output_slots_bytes", i64(m.output_slots));
  return j.str();
}

void check_coordinator_memory(const CoordinatorMemory& m, const std::string& config_path) {
  if (m.fits()) return;
  throw_invalid(config_path + ": the coordinator needs " + format_bytes(m.total()) + " (" + m.parts() +
                ") but coordinator.memory_limit is " + format_bytes(m.limit) +
                ": raise it, or use data.train_limit / data.test_limit or a smaller batch");
}

}  // namespace devmap
