// Wire messages between the coordinator and workers. Every ZeroMQ message
// is one frame: a MsgHeader followed by the message's body. Bodies are
// plain structs with their size fixed by static_assert, or bytes encoded
// with core/base/bytes.h (the plan, error text). Tensor data never travels in a
// message: only handles to shared-memory slots do.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace devmap::wire {

constexpr uint32_t kMagic = 0x50414d44;  // "DMAP" little-endian
// Bumped whenever a message's layout or meaning changes; HELLO carries it
// and a mismatch ends the handshake with an error.
constexpr uint32_t kProtocolVersion = 14;

enum class MsgType : uint32_t {
  kHello = 1,     // worker -> coordinator: Hello
  kPlan = 2,      // coordinator -> worker: encoded WorkerPlan
  kReady = 3,     // worker -> coordinator: Ready
  kStep = 4,      // coordinator -> worker: Step
  kStepDone = 5,  // worker -> coordinator: StepDone (+ ParamStat entries when asked)
  kError = 6,     // either way: UTF-8 text, the whole reason
  kShutdown = 7,  // coordinator -> worker: no body
  kBye = 8,       // worker -> coordinator: Bye, sent just before exit(0)
  // Data plane, worker -> worker over each worker's PULL socket:
  kTensorReady = 9,   // producer -> consumer: TensorHandle, the slot holds the step's tensor
  kSlotRelease = 10,  // consumer -> producer: TensorHandle, the consumer is done with the slot
  // Parameters to and from files, coordinator -> worker: encoded ParamsIo
  // (core/base/bytes.h); the worker answers PARAMS_DONE (no body) or ERROR.
  kParamsIo = 11,
  kParamsDone = 12,
  // worker -> coordinator, from the worker's watchdog thread on a socket of
  // its own (identity "<device>/watchdog"): Heartbeat, every 200 ms.
  kHeartbeat = 13,
  // worker -> coordinator, during a STEP with kSendGradients: GradientReady,
  // one gradient is in the segment PARAMS_IO kMapGradients named.
  kGradientReady = 14,
};
constexpr uint32_t kMaxMsgType = 14;

const char* msg_type_name(MsgType t);

struct MsgHeader {
  uint32_t magic;
  uint32_t type;
  uint64_t body_bytes;
};
static_assert(sizeof(MsgHeader) == 16 && std::is_trivially_copyable_v<MsgHeader>);

struct Hello {
  uint32_t protocol_version;
  int32_t pid;
  char device[24];  // NUL-terminated
};
static_assert(sizeof(Hello) == 32 && std::is_trivially_copyable_v<Hello>);

struct Ready {
  uint64_t param_count;   // trained parameters this worker owns
  uint64_t buffer_bytes;  // bytes of tensors and workspace it allocated
  char runtime[96];       // the worker's compute libraries, e.g. "OpenBLAS 0.3.21 ... Zen", NUL-terminated
};
static_assert(sizeof(Ready) == 112 && std::is_trivially_copyable_v<Ready>);

enum StepFlags : uint32_t {
  kTrain = 1u << 0,       // forward + backward + optimizer update (else forward only)
  kParamStats = 1u << 1,  // append a ParamStat per parameter to StepDone
  kAccumulate = 1u << 2,  // training micro-batch after the first: add to the step's gradients, loss and metric
  kNoUpdate = 1u << 3,    // training micro-batch before the last: no optimizer update yet
  kTrace = 1u << 4,       // record this step's timeline and send it in StepDone's tail (--trace)
  kUpdateOnly = 1u << 5,  // only the optimizer update of `step`, from the gradients the parameters hold
  // (or, once mapped, from the gradient segment)
  kSendGradients = 1u << 6,  // write each final gradient into the gradient segment as the backward makes it
};

struct Step {
  int64_t step;           // 0-based training step, or evaluation batch number
  int64_t batch;          // samples in this batch
  int64_t sample_offset;  // first sample within the step
  int64_t batch_total;    // samples in the whole step
  uint32_t slot;          // input slot holding this batch
  uint32_t flags;         // StepFlags
  // A round of several micro-batches (pipelined; 0 or 1: one batch as
  // above). Training: the step's batch_total samples split evenly into
  // micro_batches (sample_offset 0). Evaluation and prediction: consecutive
  // batches of `batch` samples over batch_total. Micro-batch m reads input
  // slot (slot + m) % slots and writes output slot (slot + m) % slots.
  uint32_t micro_batches;
  uint32_t reserved;
};
static_assert(sizeof(Step) == 48 && std::is_trivially_copyable_v<Step>);
// The samples of each micro-batch of a round (micro_batches > 0), by the
// rule above; the coordinator fills the slots and every worker runs them by
// this one function.
std::vector<int64_t> round_sizes(const Step& s);

struct StepDone {
  int64_t step;
  float loss;              // the loss op's value (0 when the worker has none)
  float metric;            // the first metric op's value (0 when none)
  double compute_seconds;  // from STEP to the end of its work
  double wait_seconds;     // of which waiting for other devices (receives, free slots)
  uint32_t param_stats;    // ParamStat entries that follow
  // MicroResult entries that follow the ParamStats: a round of evaluation or
  // prediction batches reports each batch's loss and metric.
  uint32_t micro_results;
  // Bytes after the MicroResults: the step's trace events (kTrace), encoded
  // by transport/trace_wire.h; 0 when not traced.
  uint64_t trace_bytes;
};

struct MicroResult {
  float loss, metric;
};
static_assert(sizeof(MicroResult) == 8 && std::is_trivially_copyable_v<MicroResult>);
static_assert(sizeof(StepDone) == 48 && std::is_trivially_copyable_v<StepDone>);

struct ParamStat {
  char name[48];  // "conv1.weight", NUL-terminated (truncated if longer)
  float grad_norm;
  float update_norm;  // ||value after - value before||
  float value_norm;
  uint32_t reserved;
};
static_assert(sizeof(ParamStat) == 64 && std::is_trivially_copyable_v<ParamStat>);

struct Bye {
  uint64_t vm_hwm_bytes;            // the worker process's peak resident set (VmHWM)
  uint64_t transport_bytes_copied;  // bytes its transport copied (0: tensors were read in place)
  uint64_t handoffs;                // tensors it sent to other workers
  uint64_t bytes_handed;            // bytes those tensors held
  uint32_t profile_entries;         // ProfileRecord entries that follow (--profile)
  uint32_t threads;                 // the worker's compute threads
  uint64_t memory_peak_bytes;       // the device allocator's peak (tensors, workspace, slots)
  uint64_t memory_limit_bytes;      // its memory_limit (0: unlimited)
  double peak_flops_per_core;       // measured FP32 peak of one core (--profile on a CPU), 0: not measured
};
static_assert(sizeof(Bye) == 64 && std::is_trivially_copyable_v<Bye>);

// Liveness and what the worker's main thread is doing. A worker whose
// heartbeats arrive but whose `instructions` stop advancing is stuck inside
// one instruction (a kernel, a wait for a peer).
constexpr int kHeartbeatPeriodMs = 200;
struct Heartbeat {
  int64_t step;           // the step being run, or -1 between steps
  uint64_t instructions;  // instructions finished since the worker started
  char activity[48];      // "conv2 backward", "recv conv1->pool1", "idle", NUL-terminated
};
static_assert(sizeof(Heartbeat) == 64 && std::is_trivially_copyable_v<Heartbeat>);

struct GradientReady {
  int64_t step;
  uint32_t entry;  // index into the kMapGradients entries
  uint32_t reserved;
};
static_assert(sizeof(GradientReady) == 16 && std::is_trivially_copyable_v<GradientReady>);

// One line of a worker's per-op timing.
struct ProfileRecord {
  char name[48];       // op or edge name, NUL-terminated
  uint32_t direction;  // core/exec/profile.h ProfileDirection
  uint32_t reserved;
  uint64_t calls;
  double seconds;
  double flops;
  char kernel[48];  // the implementation that ran, e.g. "winograd/avx512+openblas:Cooperlake", NUL-terminated
                    // (empty: unnamed)
};
static_assert(sizeof(ProfileRecord) == 128 && std::is_trivially_copyable_v<ProfileRecord>);

// A handle to one tensor in a slot of an edge's ring: what the data plane
// carries instead of the tensor's bytes.
struct TensorHandle {
  uint32_t edge;
  uint32_t slot;
  int64_t step;
  int32_t micro;  // micro-batch within the step
  uint32_t reserved;
  uint64_t bytes;  // TENSOR_READY: the bytes of the slot the tensor fills (a relay between hosts sends those)
};
static_assert(sizeof(TensorHandle) == 32 && std::is_trivially_copyable_v<TensorHandle>);

// Builds one frame: header + body.
std::string frame(MsgType type, std::string_view body);
template <typename T>
std::string frame(MsgType type, const T& body) {
  static_assert(std::is_trivially_copyable_v<T>);
  return frame(type, std::string_view(reinterpret_cast<const char*>(&body), sizeof body));
}

// A parsed frame. parse() throws devmap::Error (kRuntime) on a bad magic or
// a length that disagrees with the frame.
struct Message {
  MsgType type;
  std::string body;

  static Message parse(std::string_view frame);
  // The body as a fixed struct (optionally followed by more bytes when
  // allow_tail); throws when it is too short.
  template <typename T>
  T as(bool allow_tail = false) const;
};

void check_body_size(const Message& m, size_t want, bool allow_tail);

template <typename T>
T Message::as(bool allow_tail) const {
  static_assert(std::is_trivially_copyable_v<T>);
  check_body_size(*this, sizeof(T), allow_tail);
  T v;
  std::memcpy(&v, body.data(), sizeof v);
  return v;
}

// Copies a string into a fixed char array, NUL-terminated, truncating.
template <size_t N>
void copy_name(char (&dst)[N], std::string_view src) {
  size_t n = std::min(src.size(), N - 1);
  std::memcpy(dst, src.data(), n);
  std::memset(dst + n, 0, N - n);
}
template <size_t N>
std::string read_name(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

}  // namespace devmap::wire
