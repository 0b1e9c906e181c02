#include "transport/shm_channel.h"

#include <sys/stat.h>

#include <cstring>

#include "core/base/error.h"
#include "transport/zmq_wait.h"

namespace devmap {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct ShmChannel::EdgeState {
  EdgeState(ChannelEdge e, ShmSegment s) : edge(std::move(e)), segment(std::move(s)) {}
  ChannelEdge edge;
  ShmSegment segment;
  bool producing = false;
  // Producer: consumers yet to release each slot; the slot in use this step.
  std::vector<int> outstanding;
  uint64_t next = 0;
  int64_t acquired_step = -1;
  int acquired_micro = 0;
  uint32_t acquired_slot = 0;
  size_t acquired_bytes = 0;
  // Consumer: handles that arrived and were not yet received, in order.
  std::deque<wire::TensorHandle> ready;

  float* slot(uint32_t s) const {
    return reinterpret_cast<float*>(static_cast<char*>(segment.data()) + s * edge.slot_bytes);
  }
};

ShmChannel::ShmChannel(zmq::context_t& ctx, std::string device, const std::map<std::string, std::string>& endpoints,
                       const std::vector<ChannelEdge>& edges, std::function<void()> idle)
    : device_(std::move(device)), idle_(std::move(idle)), pull_(ctx, zmq::socket_type::pull) {
  pull_.set(zmq::sockopt::linger, 0);
  const std::string& mine = endpoints.at(device_);
  pull_.bind("ipc://" + mine);
  ::chmod(mine.c_str(), 0600);
  for (const ChannelEdge& e : edges) {
    auto st = std::make_unique<EdgeState>(e, ShmSegment::open(e.segment));
    if (st->segment.size() < e.ring_bytes())
      throw_runtime("segment " + e.segment + " is smaller than its ring of " + std::to_string(e.slots) + " slots");
    st->producing = e.producer == device_;
    st->outstanding.assign(e.slots, 0);
    // Connect to every peer this edge talks to: consumers for READY, the producer for RELEASE.
    std::vector<std::string> peers = st->producing ? e.consumers : std::vector<std::string>{e.producer};
    for (const std::string& peer : peers) {
      if (push_.count(peer)) continue;
      zmq::socket_t s(ctx, zmq::socket_type::push);
      s.set(zmq::sockopt::linger, 1000);  // let the last releases of a clean exit go out
      s.connect("ipc://" + endpoints.at(peer));
      push_.emplace(peer, std::move(s));
    }
    edges_.emplace(e.id, std::move(st));
  }
}

ShmChannel::~ShmChannel() = default;

std::vector<ShmChannel::Region> ShmChannel::regions() const {
  std::vector<Region> out;
  for (const auto& [id, st] : edges_) out.push_back({id, st->segment.data(), st->edge.ring_bytes(), st->producing});
  return out;
}

ShmChannel::EdgeState& ShmChannel::state(int edge) {
  auto it = edges_.find(edge);
  if (it == edges_.end()) throw_runtime("edge " + std::to_string(edge) + " is not connected to " + device_);
  return *it->second;
}

void ShmChannel::push(const std::string& peer, wire::MsgType type, const wire::TensorHandle& h) {
  push_.at(peer).send(zmq::buffer(wire::frame(type, h)), zmq::send_flags::none);
}

bool ShmChannel::pump(milliseconds timeout) {
  if (!wait_readable(pull_, timeout)) return false;
  zmq::message_t msg;
  while (pull_.recv(msg, zmq::recv_flags::dontwait)) {
    wire::Message m = wire::Message::parse(msg.to_string_view());
    auto h = m.as<wire::TensorHandle>();
    EdgeState& st = state(static_cast<int>(h.edge));
    if (h.slot >= st.edge.slots) throw_runtime("handle for slot " + std::to_string(h.slot) + " out of range");
    if (m.type == wire::MsgType::kTensorReady && !st.producing) {
      st.ready.push_back(h);
    } else if (m.type == wire::MsgType::kSlotRelease && st.producing) {
      if (st.outstanding[h.slot] <= 0) throw_runtime("slot released twice on edge " + std::to_string(h.edge));
      --st.outstanding[h.slot];
    } else {
      throw_runtime(std::string("unexpected ") + wire::msg_type_name(m.type) + " on the data plane");
    }
  }
  return true;
}

float* ShmChannel::acquire(int edge, int64_t step, size_t bytes, int micro) {
  EdgeState& st = state(edge);
  if (bytes > st.edge.slot_bytes)
    throw_runtime("tensor of " + std::to_string(bytes) + " bytes does not fit edge " + std::to_string(edge) +
                  "'s slots of " + std::to_string(st.edge.slot_bytes) + " bytes");
  uint32_t slot = static_cast<uint32_t>(st.next % st.edge.slots);
  auto t0 = Clock::now();
  while (st.outstanding[slot] > 0)
    if (!pump(milliseconds(100)) && idle_) idle_();
  stats_.wait_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  st.acquired_step = step;
  st.acquired_micro = micro;
  st.acquired_slot = slot;
  st.acquired_bytes = bytes;
  return st.slot(slot);
}

void ShmChannel::send(int edge, int64_t step, int micro) {
  EdgeState& st = state(edge);
  if (st.acquired_step != step || st.acquired_micro != micro)
    throw_runtime("send of edge " + std::to_string(edge) + " without acquire");
  wire::TensorHandle h{static_cast<uint32_t>(edge), st.acquired_slot, step, micro, 0, st.acquired_bytes};
  st.outstanding[st.acquired_slot] = static_cast<int>(st.edge.consumers.size());
  for (const std::string& c : st.edge.consumers) push(c, wire::MsgType::kTensorReady, h);
  ++st.next;
  st.acquired_step = -1;
  ++stats_.handoffs;
  stats_.bytes_handed += st.acquired_bytes;
}

float* ShmChannel::receive(int edge, int64_t step, int micro) {
  EdgeState& st = state(edge);
  auto t0 = Clock::now();
  while (st.ready.empty())
    if (!pump(milliseconds(100)) && idle_) idle_();
  stats_.wait_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  wire::TensorHandle h = st.ready.front();
  st.ready.pop_front();
  if (h.step != step || h.micro != micro)
    throw_runtime("edge " + std::to_string(edge) + ": expected step " + std::to_string(step) + " micro-batch " +
                  std::to_string(micro) + ", got step " + std::to_string(h.step) + " micro-batch " +
                  std::to_string(h.micro));
  held_.push_back(Held{edge, h.slot, micro});
  return st.slot(h.slot);
}

void ShmChannel::release(int64_t step, int micro) {
  std::vector<Held> kept;
  for (const Held& held : held_) {
    if (micro >= 0 && held.micro != micro) {
      kept.push_back(held);
      continue;
    }
    EdgeState& st = state(held.edge);
    push(st.edge.producer, wire::MsgType::kSlotRelease,
         wire::TensorHandle{static_cast<uint32_t>(held.edge), held.slot, step, held.micro, 0, 0});
  }
  held_ = std::move(kept);
}

}  // namespace devmap
