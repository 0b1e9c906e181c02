#include "coordinator/plan/split_report.h"

#include <ostream>

#include "coordinator/util/json_writer.h"
#include "core/base/format_bytes.h"
#include "core/graph/split_op.h"

namespace devmap {

std::vector<SplitPartReport> split_parts(const Graph& graph, int64_t batch) {
  std::vector<SplitPartReport> out;
  for (int i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(i);
    if (n.part_of.empty()) continue;
    SplitPartReport r;
    r.op = n.part_of;
    r.part = n.name;
    r.device = n.device;
    r.attr = n.schema->split_attr;
    r.begin = n.part_begin;
    r.end = n.part_begin + n.attrs.get_int(r.attr);
    r.param_bytes = static_cast<uint64_t>(n.param_bytes());
    const int whole = graph.find(n.part_of);
    r.joined_on = whole >= 0 ? graph.node(whole).device : n.device;
    bool first_on_device = true;  // the input crosses once, for the op's first part on the device
    for (const SplitPartReport& earlier : out)
      if (earlier.op == r.op && earlier.device == r.device) first_on_device = false;
    for (int in : n.inputs) {
      if (is_fan_out(graph, in)) in = graph.node(in).inputs.front();  // it reads the input on the part's device
      if (first_on_device && graph.node(in).device != n.device)
        r.input_bytes += static_cast<uint64_t>(graph.node(in).activation_bytes(batch));
    }
    if (r.joined_on != n.device) r.output_bytes = static_cast<uint64_t>(n.activation_bytes(batch));
    out.push_back(std::move(r));
  }
  return out;
}

void print_split_parts(const std::vector<SplitPartReport>& parts, int64_t batch, bool training, std::ostream& os) {
  if (parts.empty()) return;
  os << "\nsplit ops (per batch of " << batch << "; each part's input crosses once per device"
     << (training ? ", and every tensor moved comes back as a gradient" : "") << "):\n";
  std::string op;
  for (const SplitPartReport& p : parts) {
    if (p.op != op) {
      op = p.op;
      os << "  " << p.op << ": joined on " << p.joined_on << "\n";
    }
    os << "    " << p.part << " on " << p.device << ": " << p.attr << " " << p.begin << ".." << p.end - 1 << " ("
       << p.end - p.begin << "), parameters " << format_bytes(p.param_bytes) << ", input in "
       << (p.input_bytes ? format_bytes(p.input_bytes) : std::string("-")) << ", output out "
       << (p.output_bytes ? format_bytes(p.output_bytes) : std::string("-")) << "\n";
  }
}

std::string split_parts_json(const std::vector<SplitPartReport>& parts) {
  std::string out = "[";
  for (const SplitPartReport& p : parts) {
    JsonObject j;
    j.add("op", p.op).add("part", p.part).add("device", p.device).add("split_by", p.attr);
    j.add("begin", p.begin).add("end", p.end).add("params_bytes", static_cast<int64_t>(p.param_bytes));
    j.add("input_bytes", static_cast<int64_t>(p.input_bytes)).add("output_bytes", static_cast<int64_t>(p.output_bytes));
    j.add("joined_on", p.joined_on);
    out += (out.size() > 1 ? "," : "") + j.str();
  }
  return out + "]";
}

}  // namespace devmap
