#include "worker/gradient_outlet.h"

#include <cstring>

#include "core/base/error.h"
#include "transport/wire.h"

namespace devmap {

namespace {

constexpr std::string_view kGradSuffix = ".grad";

}  // namespace

GradientOutlet::GradientOutlet(const ParamsIo& io, std::vector<Parameter>& params, DeviceMemory& memory)
    : segment_(ShmSegment::open(io.path)), memory_(memory), in_place_(memory.host_accessible()) {
  for (size_t k = 0; k < io.entries.size(); ++k) {
    const ParamsIo::Entry& e = io.entries[k];
    if (!e.name.ends_with(kGradSuffix)) throw_runtime("gradient map: '" + e.name + "' names no gradient");
    const std::string name = e.name.substr(0, e.name.size() - kGradSuffix.size());
    Parameter* p = nullptr;
    for (Parameter& q : params)
      if (q.name == name) p = &q;
    if (!p) throw_runtime("gradient map: this worker holds no parameter named '" + name + "'");
    if (!p->spec.trained) throw_runtime("gradient map: parameter '" + name + "' is not trained");
    if (e.bytes != static_cast<uint64_t>(p->spec.shape.numel()) * sizeof(float) || e.offset + e.bytes > segment_.size())
      throw_runtime("gradient map: '" + e.name + "' does not fit its parameter or the segment " + io.path);
    if (static_cast<size_t>(p->node) >= by_node_.size()) by_node_.resize(static_cast<size_t>(p->node) + 1);
    by_node_[static_cast<size_t>(p->node)].push_back(outs_.size());
    outs_.push_back(Out{p, e.offset, static_cast<uint32_t>(k)});
  }
  if (!in_place_) {
    // Pinned (a GPU: cudaHostRegister), so each gradient's copy is one DMA
    // straight into the segment.
    memory_.register_host(segment_.data(), segment_.size());
    pinned_ = true;
    return;
  }
  for (const Out& out : outs_) {
    float* in_segment = reinterpret_cast<float*>(static_cast<char*>(segment_.data()) + out.offset);
    const int64_t count = out.param->spec.shape.numel();
    std::memcpy(in_segment, out.param->grad.data(), static_cast<size_t>(count) * sizeof(float));
    out.param->grad = DeviceBuffer::borrowed(in_segment, count);
  }
}

GradientOutlet::~GradientOutlet() {
  if (pinned_) memory_.unregister_host(segment_.data());
}

void GradientOutlet::begin(int64_t step, Send send) {
  step_ = step;
  send_ = std::move(send);
  sent_.assign(outs_.size(), false);
}

void GradientOutlet::write(const Out& out) {
  if (!in_place_) {
    const size_t bytes = static_cast<size_t>(out.param->spec.shape.numel()) * sizeof(float);
    memory_.copy_to_host(static_cast<char*>(segment_.data()) + out.offset, out.param->grad.data(), bytes);
  }
  send_(wire::frame(wire::MsgType::kGradientReady, wire::GradientReady{step_, out.entry, 0}));
}

void GradientOutlet::after(const Instr& ins) {
  if (ins.kind != InstrKind::kBackward || ins.node < 0 || static_cast<size_t>(ins.node) >= by_node_.size()) return;
  for (size_t i : by_node_[static_cast<size_t>(ins.node)]) {
    if (sent_[i]) continue;
    write(outs_[i]);
    sent_[i] = true;
  }
}

void GradientOutlet::end() {
  for (size_t i = 0; i < outs_.size(); ++i)
    if (!sent_[i]) write(outs_[i]);
  send_ = nullptr;
  step_ = -1;
}

void GradientOutlet::read_back() {
  if (in_place_) return;
  for (const Out& out : outs_) {
    const size_t bytes = static_cast<size_t>(out.param->spec.shape.numel()) * sizeof(float);
    memory_.copy_from_host(out.param->grad.data(), static_cast<const char*>(segment_.data()) + out.offset, bytes);
  }
}

}  // namespace devmap
