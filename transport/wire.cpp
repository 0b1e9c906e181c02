#include "transport/wire.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/plan/memory_plan.h"

namespace devmap::wire {

std::vector<int64_t> round_sizes(const Step& s) {
  if (s.flags & kTrain) return split_evenly(s.batch_total, s.micro_batches);
  std::vector<int64_t> sizes;
  for (int64_t left = s.batch_total; left > 0 && s.batch > 0; left -= s.batch) sizes.push_back(std::min(left, s.batch));
  return sizes;
}

const char* msg_type_name(MsgType t) {
  switch (t) {
    case MsgType::kHello: return "HELLO";
    case MsgType::kPlan: return "PLAN";
    case MsgType::kReady: return "READY";
    case MsgType::kStep: return "STEP";
    case MsgType::kStepDone: return "STEP_DONE";
    case MsgType::kError: return "ERROR";
    case MsgType::kShutdown: return "SHUTDOWN";
    case MsgType::kBye: return "BYE";
    case MsgType::kTensorReady: return "TENSOR_READY";
    case MsgType::kSlotRelease: return "SLOT_RELEASE";
    case MsgType::kParamsIo: return "PARAMS_IO";
    case MsgType::kParamsDone: return "PARAMS_DONE";
    case MsgType::kHeartbeat: return "HEARTBEAT";
    case MsgType::kGradientReady: return "GRADIENT_READY";
  }
  return "UNKNOWN";
}

std::string frame(MsgType type, std::string_view body) {
  MsgHeader h{kMagic, static_cast<uint32_t>(type), body.size()};
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out.append(body);
  return out;
}

Message Message::parse(std::string_view f) {
  if (f.size() < sizeof(MsgHeader)) throw_runtime("malformed message: " + std::to_string(f.size()) + " bytes");
  MsgHeader h;
  std::memcpy(&h, f.data(), sizeof h);
  if (h.magic != kMagic) throw_runtime("malformed message: bad magic (not a devmap peer?)");
  if (h.body_bytes != f.size() - sizeof h)
    throw_runtime("malformed message: header says " + std::to_string(h.body_bytes) + " body bytes, frame has " +
                  std::to_string(f.size() - sizeof h));
  if (h.type < 1 || h.type > kMaxMsgType) throw_runtime("malformed message: unknown type " + std::to_string(h.type));
  return Message{static_cast<MsgType>(h.type), std::string(f.substr(sizeof h))};
}

void check_body_size(const Message& m, size_t want, bool allow_tail) {
  if (m.body.size() < want || (!allow_tail && m.body.size() != want))
    throw_runtime(std::string("malformed ") + msg_type_name(m.type) + " message: body of " +
                  std::to_string(m.body.size()) + " bytes, expected " + std::to_string(want));
}

}  // namespace devmap::wire
