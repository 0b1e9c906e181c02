#include "coordinator/plan/placement_dot.h"

#include <unistd.h>

#include <filesystem>
#include <map>

#include "coordinator/plan/step_costs.h"
#include "coordinator/util/atomic_file.h"
#include "coordinator/util/program_output.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"

namespace devmap {
namespace {

std::string dot_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '\\';  // labels keep their \n line breaks
    q += c;
  }
  return q + "\"";
}

// Whether op `node`'s gradient rule, as its device runs it, gives its input
// `k` a gradient: false for ops without one (metrics, argmax), for inputs
// whose rule gives none (labels) and for ops outside the backward pass.
bool input_gets_gradient(const Partition& partition, const Node& n, int node, size_t k) {
  for (const Instr& ins : partition.program_for(n.device).backward)
    if (ins.kind == InstrKind::kBackward && ins.node == node) return k < ins.out.size() && ins.out[k] >= 0;
  return false;
}

}  // namespace

std::string placement_dot(const PlacementPicture& p) {
  const Graph& g = *p.graph;
  std::string out =
      "digraph devmap {\n  rankdir=TB;\n  fontname=\"Helvetica\";\n  node [shape=box, style=rounded, "
      "fontname=\"Helvetica\"];\n"
      "  edge [fontname=\"Helvetica\", fontsize=10];\n  label=" +
      dot_string(p.config->path + ": batch " + std::to_string(p.batch) +
                 (p.memory->split.count > 1
                      ? " as " + split_phrase(p.batch, p.memory->split.micro) +
                            (p.memory->rounds ? std::string(", ") + pipeline_kind_name(p.memory->pipeline.kind)
                                              : std::string())
                      : std::string())) +
      ";\n";
  for (size_t d = 0; d < p.partition->devices.size(); ++d) {
    const std::string& name = p.partition->devices[d];
    const DeviceSpec* spec = p.config->find_device(name);
    std::string label = name;
    if (spec) label += " (" + std::to_string(spec->threads) + (spec->threads == 1 ? " thread)" : " threads)");
    if (const DeviceMemoryPlan* m = p.memory->plan.find(name))
      label += "\\n" + format_bytes(m->total()) + " planned, limit " +
               (m->limit ? format_bytes(m->limit) : std::string("none"));
    out += "  subgraph cluster_" + std::to_string(d) + " {\n    label=" + dot_string(label) +
           ";\n    style=rounded; color=gray40;\n";
    for (int i = 0; i < g.size(); ++i)
      if (!g.node(i).schema->fed_by_coordinator() && g.node(i).device == name)
        out += "    " + dot_string(g.node(i).name) + " [label=" + dot_string(g.node(i).name + "\\n" + g.node(i).op()) +
               "];\n";
    out += "  }\n";
  }
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).schema->fed_by_coordinator()) out += "  " + dot_string(g.node(i).name) + " [shape=ellipse];\n";
  // Bytes per step of each tensor that crosses devices (forward, and its
  // gradient back when trained), by (producer op, consumer device).
  std::map<std::pair<std::string, std::string>, int64_t> forward_bytes, gradient_bytes;
  for (const Edge& e : p.partition->edges) {
    const std::string op = e.name.substr(0, e.name.find('@'));
    for (const std::string& to : e.consumers) {
      if (e.backward)
        gradient_bytes[{op, e.producer}] += e.bytes(p.batch);
      else
        forward_bytes[{op, to}] += e.bytes(p.batch);
    }
  }
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Node& src = g.node(n.inputs[k]);
      const bool cut = !src.schema->fed_by_coordinator() && src.device != n.device;
      out += "  " + dot_string(src.name) + " -> " + dot_string(n.name);
      if (cut) {
        std::string label = format_bytes(static_cast<uint64_t>(forward_bytes[{src.name, n.device}]));
        // The gradient back is the sum of what n's device sends for src;
        // an arrow gets it only when n adds to it.
        if (auto it = gradient_bytes.find({src.name, n.device});
            it != gradient_bytes.end() && input_gets_gradient(*p.partition, n, i, k))
          label += "\\n+ " + format_bytes(static_cast<uint64_t>(it->second)) + " gradient back";
        out += " [style=bold, color=firebrick, fontcolor=firebrick, label=" + dot_string(label + " per step") + "]";
      }
      out += ";\n";
    }
  }
  return out + "}\n";
}

void write_placement_picture(const std::string& path, const std::string& dot) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".png") {
    write_file_atomically(path, dot, "--dot picture");
    return;
  }
  const std::string source = path + ".dot.tmp-" + std::to_string(::getpid());
  write_file_atomically(source, dot, "--dot picture");
  const ProgramOutput r = run_program({"dot", "-T" + ext.substr(1), "-o", path, source});
  std::filesystem::remove(source);
  if (!r.ran || r.status == 127)
    throw_invalid("--dot " + path + ": rendering " + ext + " needs Graphviz's dot (scripts/setup.sh installs it); " +
                  "or give a .dot name for the text");
  if (r.status != 0)
    throw_runtime("--dot " + path + ": dot failed (status " + std::to_string(r.status) + "): " + r.text);
}

}  // namespace devmap
