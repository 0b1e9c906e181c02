// Target worker_plan: bytes as the body of a PLAN message, which a worker
// decodes and plans from before it allocates anything.
#include <string>

#include "core/base/error.h"
#include "core/exec/worker_plan.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_targets.h"
#include "fuzz/worker_replan.h"

namespace devmap::fuzz {

void run_worker_plan(std::string_view data) {
  WorkerPlan plan;
  try {
    plan = decode_worker_plan(data);
  } catch (const Error&) {
    return;  // malformed bytes, rejected with a message
  }
  // Encoding normalises (e.g. any non-zero flag byte becomes 1); after one
  // round the bytes must be stable.
  const std::string bytes = encode_worker_plan(plan);
  try {
    FUZZ_CHECK(encode_worker_plan(decode_worker_plan(bytes)) == bytes, "a decoded plan encodes and decodes again");
  } catch (const Error& e) {
    FUZZ_CHECK(false, e.what());
  }
  try {
    replan_as_worker(plan);
  } catch (const Error&) {
    // an inconsistent plan (no loss, a device without ops): refused
  }
}

}  // namespace devmap::fuzz
