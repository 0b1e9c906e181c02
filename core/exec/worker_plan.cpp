#include "core/exec/worker_plan.h"

#include "core/base/bytes.h"

namespace devmap {
namespace {

void put_attr(ByteWriter& w, const AttrValue& v) {
  w.put<uint8_t>(static_cast<uint8_t>(v.index()));
  if (auto* i = std::get_if<int64_t>(&v)) w.put(*i);
  if (auto* d = std::get_if<double>(&v)) w.put(*d);
  if (auto* s = std::get_if<std::string>(&v)) w.put_string(*s);
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    w.put<uint32_t>(static_cast<uint32_t>(l->size()));
    for (int64_t x : *l) w.put(x);
  }
  if (auto* b = std::get_if<bool>(&v)) w.put<uint8_t>(*b ? 1 : 0);
}

AttrValue get_attr(ByteReader& r) {
  switch (r.get<uint8_t>()) {
    case 0: return r.get<int64_t>();
    case 1: return r.get<double>();
    case 2: return r.get_string();
    case 3: {
      std::vector<int64_t> l(r.get_count(8));
      for (auto& x : l) x = r.get<int64_t>();
      return l;
    }
    case 4: return r.get<uint8_t>() != 0;
    default: throw_runtime("malformed worker plan: unknown attribute type");
  }
}

// Holds a decoded node to what the config loader guarantees (shape
// inference and kernels trust it): its schema's input count, and attributes
// of its schema only, each of its type and range. A missing optional
// attribute gets its default.
void check_node(Node& n) {
  auto fail = [&](const std::string& why) {
    throw_runtime("malformed worker plan: op '" + n.name + "' (" + n.op() + ") " + why);
  };
  if (!n.schema->accepts_inputs(static_cast<int64_t>(n.inputs.size())))
    fail("has " + std::to_string(n.inputs.size()) + " inputs, its schema takes " + n.schema->inputs_wanted());
  for (const auto& [key, value] : n.attrs.values()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : n.schema->attrs)
      if (s.name == key) spec = &s;
    if (!spec) fail("has unknown attribute '" + key + "'");
    if (value.index() != static_cast<size_t>(spec->type)) fail("attribute '" + key + "' has the wrong type");
    bool in_range = true;
    if (const auto* i = std::get_if<int64_t>(&value)) in_range = *i >= spec->min_int;
    if (const auto* l = std::get_if<std::vector<int64_t>>(&value))
      for (int64_t x : *l) in_range = in_range && x >= spec->min_int;
    if (!in_range) fail("attribute '" + key + "' is below " + std::to_string(spec->min_int));
  }
  for (const AttrSpec& spec : n.schema->attrs) {
    if (n.attrs.has(spec.name)) continue;
    if (spec.required) fail("lacks attribute '" + spec.name + "'");
    n.attrs.set(spec.name, spec.default_value);
  }
}

void put_layout(ByteWriter& w, const InputLayout& l) {
  w.put<uint32_t>(l.slots);
  w.put<uint64_t>(l.slot_bytes);
  w.put<uint32_t>(static_cast<uint32_t>(l.input_nodes.size()));
  for (size_t k = 0; k < l.input_nodes.size(); ++k) {
    w.put<int32_t>(l.input_nodes[k]);
    w.put<uint64_t>(l.input_offsets[k]);
  }
}

InputLayout get_layout(ByteReader& r) {
  InputLayout l;
  l.slots = r.get<uint32_t>();
  l.slot_bytes = r.get<uint64_t>();
  uint32_t n = r.get_count(12);
  for (uint32_t k = 0; k < n; ++k) {
    l.input_nodes.push_back(r.get<int32_t>());
    l.input_offsets.push_back(r.get<uint64_t>());
  }
  return l;
}

}  // namespace

InputLayout InputLayout::for_graph(const Graph& graph, int64_t max_batch, uint32_t slots) {
  std::vector<int> inputs;
  for (int i = 0; i < graph.size(); ++i)
    if (graph.node(i).schema->fed_by_coordinator()) inputs.push_back(i);
  return for_nodes(graph, inputs, max_batch, slots);
}

InputLayout InputLayout::for_nodes(const Graph& graph, const std::vector<int>& nodes, int64_t max_batch,
                                   uint32_t slots) {
  InputLayout l;
  l.slots = slots;
  uint64_t off = 0;
  for (int i : nodes) {
    l.input_nodes.push_back(i);
    l.input_offsets.push_back(off);
    uint64_t bytes = static_cast<uint64_t>(graph.node(i).out_shape_for(max_batch).numel()) * sizeof(float);
    off += round_up_to_cache_line(bytes);
  }
  l.slot_bytes = off;
  return l;
}

std::string encode_worker_plan(const WorkerPlan& p) {
  ByteWriter w;
  w.put_string(p.device);
  w.put<int32_t>(p.threads);
  w.put<uint32_t>(static_cast<uint32_t>(p.affinity.size()));
  for (int c : p.affinity) w.put<int32_t>(c);
  w.put<uint64_t>(p.seed);
  w.put<int64_t>(p.gradient_chunk);
  w.put<uint8_t>(p.training ? 1 : 0);
  w.put<uint8_t>(p.profile ? 1 : 0);
  w.put<int32_t>(static_cast<int32_t>(p.optimizer.kind));
  for (double d : {p.optimizer.learning_rate, p.optimizer.momentum, p.optimizer.beta1, p.optimizer.beta2,
                   p.optimizer.epsilon, p.optimizer.weight_decay})
    w.put(d);
  const LrSchedule& sched = p.optimizer.schedule;
  w.put<int32_t>(static_cast<int32_t>(sched.kind));
  for (int64_t v : {sched.warmup_steps, sched.step_size, sched.cosine_steps, sched.total_steps}) w.put<int64_t>(v);
  for (double d : {sched.warmup_start_factor, sched.gamma, sched.min_learning_rate}) w.put(d);
  w.put<int64_t>(p.max_batch);
  w.put<int32_t>(static_cast<int32_t>(p.pipeline));
  w.put<int32_t>(p.micro_batches);
  w.put<uint64_t>(p.memory_limit);
  w.put<uint8_t>(p.offload ? 1 : 0);
  w.put<uint32_t>(static_cast<uint32_t>(p.graph.size()));
  for (const Node& n : p.graph.nodes()) {
    w.put_string(n.name);
    w.put_string(n.op());
    w.put_string(n.device);
    w.put<uint8_t>(n.recomputed ? 1 : 0);
    w.put_string(n.part_of);
    w.put<int64_t>(n.part_begin);
    w.put<int64_t>(n.part_whole);
    w.put<uint32_t>(static_cast<uint32_t>(n.inputs.size()));
    for (int in : n.inputs) w.put<int32_t>(in);
    w.put<uint32_t>(static_cast<uint32_t>(n.attrs.values().size()));
    for (const auto& [k, v] : n.attrs.values()) {
      w.put_string(k);
      put_attr(w, v);
    }
  }
  w.put<uint32_t>(static_cast<uint32_t>(p.outputs.size()));
  for (int o : p.outputs) w.put<int32_t>(o);
  w.put_string(p.input_segment);
  put_layout(w, p.layout);
  w.put_string(p.output_segment);
  put_layout(w, p.output_layout);
  w.put_string(p.run_prefix);
  w.put_string(p.run_dir);
  return w.bytes();
}

WorkerPlan decode_worker_plan(std::string_view bytes) {
  ByteReader r(bytes);
  WorkerPlan p;
  p.device = r.get_string();
  p.threads = r.get<int32_t>();
  uint32_t ncores = r.get_count(4);
  for (uint32_t k = 0; k < ncores; ++k) p.affinity.push_back(r.get<int32_t>());
  p.seed = r.get<uint64_t>();
  p.gradient_chunk = r.get<int64_t>();
  p.training = r.get<uint8_t>() != 0;
  p.profile = r.get<uint8_t>() != 0;
  int32_t kind = r.get<int32_t>();
  if (kind < 0 || kind > 2) throw_runtime("malformed worker plan: unknown optimizer");
  p.optimizer.kind = static_cast<OptimizerConfig::Kind>(kind);
  for (double* d : {&p.optimizer.learning_rate, &p.optimizer.momentum, &p.optimizer.beta1, &p.optimizer.beta2,
                    &p.optimizer.epsilon, &p.optimizer.weight_decay})
    *d = r.get<double>();
  LrSchedule& sched = p.optimizer.schedule;
  const int32_t sched_kind = r.get<int32_t>();
  if (sched_kind < 0 || sched_kind > 2) throw_runtime("malformed worker plan: unknown learning-rate schedule");
  sched.kind = static_cast<LrSchedule::Kind>(sched_kind);
  for (int64_t* v : {&sched.warmup_steps, &sched.step_size, &sched.cosine_steps, &sched.total_steps})
    *v = r.get<int64_t>();
  for (double* d : {&sched.warmup_start_factor, &sched.gamma, &sched.min_learning_rate}) *d = r.get<double>();
  if (sched.warmup_steps < 0 || sched.step_size < 1)
    throw_runtime("malformed worker plan: learning-rate schedule out of range");
  p.max_batch = r.get<int64_t>();
  if (p.max_batch < 1 || p.max_batch > (int64_t{1} << 24))
    throw_runtime("malformed worker plan: max_batch " + std::to_string(p.max_batch) + " is out of range");
  const int32_t pipeline = r.get<int32_t>();
  if (pipeline < 0 || pipeline > 2) throw_runtime("malformed worker plan: unknown pipeline schedule");
  p.pipeline = static_cast<PipelineKind>(pipeline);
  p.micro_batches = r.get<int32_t>();
  if (p.micro_batches < 1 || p.micro_batches > kMaxMicroBatches)
    throw_runtime("malformed worker plan: " + std::to_string(p.micro_batches) + " micro-batches");
  p.memory_limit = r.get<uint64_t>();
  p.offload = r.get<uint8_t>() != 0;
  uint32_t count = r.get_count(16);
  for (uint32_t i = 0; i < count; ++i) {
    Node n;
    n.name = r.get_string();
    std::string op = r.get_string();
    n.schema = find_op(op);
    if (!n.schema) throw_runtime("worker plan names op '" + op + "', which this worker does not know");
    n.device = r.get_string();
    n.recomputed = r.get<uint8_t>() != 0;
    n.part_of = r.get_string();
    n.part_begin = r.get<int64_t>();
    n.part_whole = r.get<int64_t>();
    uint32_t ninputs = r.get_count(4);
    for (uint32_t k = 0; k < ninputs; ++k) {
      int32_t in = r.get<int32_t>();
      if (in < 0 || static_cast<uint32_t>(in) >= i) throw_runtime("malformed worker plan: bad input index");
      n.inputs.push_back(in);
    }
    uint32_t nattrs = r.get_count(5);
    for (uint32_t k = 0; k < nattrs; ++k) {
      std::string key = r.get_string();
      n.attrs.set(key, get_attr(r));
    }
    check_node(n);
    p.graph.add(std::move(n));
  }
  p.graph.infer();
  // A part holds rows [part_begin, part_begin + its outputs) of at most
  // 2^31 (sizes that stay far from overflow in element offsets).
  for (const Node& n : p.graph.nodes()) {
    if (n.part_of.empty()) continue;
    const int64_t outputs = n.schema->split_attr.empty() ? -1 : n.attrs.get_int(n.schema->split_attr);
    if (outputs < 1 || n.part_begin < 0 || n.part_whole > (int64_t{1} << 31) || n.part_begin > n.part_whole ||
        outputs > n.part_whole - n.part_begin)
      throw_runtime("malformed worker plan: op '" + n.name + "' is not a part of '" + n.part_of + "'");
  }
  uint32_t nout = r.get_count(4);
  for (uint32_t k = 0; k < nout; ++k) p.outputs.push_back(r.get<int32_t>());
  p.input_segment = r.get_string();
  p.layout = get_layout(r);
  p.output_segment = r.get_string();
  p.output_layout = get_layout(r);
  p.run_prefix = r.get_string();
  p.run_dir = r.get_string();
  for (int o : p.outputs)
    if (o < 0 || o >= p.graph.size()) throw_runtime("malformed worker plan: bad output index");
  for (int n : p.layout.input_nodes)
    if (n < 0 || n >= p.graph.size() || !p.graph.node(n).schema->fed_by_coordinator())
      throw_runtime("malformed worker plan: bad input node");
  for (int n : p.output_layout.input_nodes)
    if (n < 0 || n >= p.graph.size()) throw_runtime("malformed worker plan: bad output node");
  if (!r.done()) throw_runtime("malformed worker plan: trailing bytes");
  return p;
}

}  // namespace devmap
