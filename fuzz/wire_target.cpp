// Target wire_message: bytes as one ZeroMQ frame, decoded as its receiver
// decodes it (coordinator/run/worker_group.cpp, worker/worker_service.cpp,
// transport/shm_channel.cpp).
#include <cstring>
#include <string>

#include "core/base/error.h"
#include "core/exec/worker_plan.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_targets.h"
#include "transport/params_io.h"
#include "transport/step_report.h"
#include "transport/wire.h"

namespace devmap::fuzz {
namespace {

// A fixed struct followed by `count(head)` entries of type Entry, each read
// as the receiver reads it.
template <typename Head, typename Entry, typename Count>
void with_entries(const wire::Message& m, Count count) {
  const Head head = m.as<Head>(/*allow_tail=*/true);
  wire::check_body_size(m, sizeof head + count(head) * sizeof(Entry), false);
  for (size_t i = 0; i < count(head); ++i) {
    Entry e;
    std::memcpy(&e, m.body.data() + sizeof head + i * sizeof e, sizeof e);
    (void)wire::read_name(e.name);
  }
}

void decode_body(const wire::Message& m) {
  using wire::MsgType;
  switch (m.type) {
    case MsgType::kHello: (void)wire::read_name(m.as<wire::Hello>().device); break;
    case MsgType::kReady: (void)wire::read_name(m.as<wire::Ready>().runtime); break;
    case MsgType::kStep: (void)m.as<wire::Step>(); break;
    case MsgType::kHeartbeat: (void)wire::read_name(m.as<wire::Heartbeat>().activity); break;
    case MsgType::kStepDone: {
      // As WorkerGroup::collect.
      for (const wire::ParamStat& e : wire::decode_step_done(m).param_stats) (void)wire::read_name(e.name);
      break;
    }
    case MsgType::kBye:
      with_entries<wire::Bye, wire::ProfileRecord>(m, [](const wire::Bye& b) { return size_t{b.profile_entries}; });
      break;
    case MsgType::kTensorReady:
    case MsgType::kSlotRelease: (void)m.as<wire::TensorHandle>(); break;
    case MsgType::kGradientReady: (void)m.as<wire::GradientReady>(); break;
    case MsgType::kParamsIo: {
      const ParamsIo io = decode_params_io(m.body);
      FUZZ_CHECK(encode_params_io(io) == m.body, "PARAMS_IO decodes only what it encodes");
      break;
    }
    case MsgType::kPlan: {
      const WorkerPlan plan = decode_worker_plan(m.body);
      const std::string bytes = encode_worker_plan(plan);
      try {
        FUZZ_CHECK(encode_worker_plan(decode_worker_plan(bytes)) == bytes, "a decoded plan encodes and decodes");
      } catch (const Error& e) {
        FUZZ_CHECK(false, e.what());
      }
      break;
    }
    case MsgType::kError:     // text, printed as it is
    case MsgType::kShutdown:  // no body; receivers ignore one
    case MsgType::kParamsDone: break;
  }
}

}  // namespace

void run_wire_message(std::string_view data) {
  try {
    const wire::Message m = wire::Message::parse(data);
    FUZZ_CHECK(wire::frame(m.type, std::string_view(m.body)) == data, "a parsed frame is the frame it came from");
    decode_body(m);
  } catch (const Error&) {
    // a malformed message, rejected with a message
  }
}

}  // namespace devmap::fuzz
