// Constant folding of what only shapes depend on (Constant, Shape, Gather,
// Cast, Slice, ConstantOfShape, Transpose, and Add, Sub, Mul, Div of
// constants), GELU written as Div, Erf, Add, Mul, Mul, and
// Add of two computed tensors (devmap's add).
#include <cmath>

#include "coordinator/onnx/import_state.h"

namespace devmap::onnx_io {
namespace {

using Dims = std::vector<int64_t>;

void import_constant(Importer& im, const onnx::NodeProto& n) {
  HostTensor t;
  if (const auto* a = Importer::attr(n, "value")) {
    t = tensor_values(a->t(), n.name());
  } else if (const auto* f = Importer::attr(n, "value_float")) {
    t.values = {static_cast<double>(f->f())};
  } else if (const auto* fs = Importer::attr(n, "value_floats")) {
    t.dims = {fs->floats_size()};
    t.values.assign(fs->floats().begin(), fs->floats().end());
  } else if (const auto* i = Importer::attr(n, "value_int")) {
    t.integer = true;
    t.values = {static_cast<double>(i->i())};
  } else if (const auto* is = Importer::attr(n, "value_ints")) {
    t.integer = true;
    t.dims = {is->ints_size()};
    for (int64_t v : is->ints()) t.values.push_back(static_cast<double>(v));
  } else {
    return im.unsupported(n, "needs a dense value (sparse and string constants are not read)");
  }
  im.set_const(n.output(0), std::move(t));
}

void import_shape(Importer& im, const onnx::NodeProto& n) {
  const std::optional<Dims> d = im.dims(Importer::input(n, 0));
  if (!d) return im.needs_shapes(n);
  const int64_t rank = static_cast<int64_t>(d->size());
  int64_t start = Importer::attr_int(n, "start", 0), end = Importer::attr_int(n, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  HostTensor t;
  t.integer = true;
  for (int64_t i = start; i < end; ++i) {
    const int64_t v = (*d)[static_cast<size_t>(i)];
    if (v < 0 && i != 0) return im.unsupported(n, "needs a fixed size for every dimension but the batch");
    t.values.push_back(v < 0 ? kRuntimeBatch : static_cast<double>(v));
  }
  t.dims = {end - start};
  im.set_const(n.output(0), std::move(t));
}

void import_gather(Importer& im, const onnx::NodeProto& n) {
  const HostTensor* data = im.constant(Importer::input(n, 0));
  const HostTensor* idx = im.param(Importer::input(n, 1));
  if (!data || !idx) return im.unsupported(n, "needs constant data and indices (devmap gathers only shapes)");
  int64_t axis = Importer::attr_int(n, "axis", 0);
  const int64_t rank = static_cast<int64_t>(data->dims.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return im.unsupported(n, "has an axis outside its data's rank");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= data->dims[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= data->dims[static_cast<size_t>(i)];
  const int64_t size = data->dims[static_cast<size_t>(axis)];
  HostTensor t;
  t.integer = data->integer;
  t.dims.assign(data->dims.begin(), data->dims.begin() + axis);
  t.dims.insert(t.dims.end(), idx->dims.begin(), idx->dims.end());
  t.dims.insert(t.dims.end(), data->dims.begin() + axis + 1, data->dims.end());
  for (int64_t o = 0; o < outer; ++o)
    for (double raw : idx->values) {
      int64_t k = static_cast<int64_t>(raw);
      if (k < 0) k += size;
      if (k < 0 || k >= size) return im.unsupported(n, "has an index outside its data");
      const auto from = data->values.begin() + (o * size + k) * inner;
      t.values.insert(t.values.end(), from, from + inner);
    }
  im.set_const(n.output(0), std::move(t));
}

void import_cast(Importer& im, const onnx::NodeProto& n) {
  const HostTensor* c = im.constant(Importer::input(n, 0));
  if (!c) return im.unsupported(n, "needs a constant input (devmap computes in float32 only)");
  HostTensor t = *c;
  const int64_t to = Importer::attr_int(n, "to", onnx::TensorProto::FLOAT);
  t.integer = to != onnx::TensorProto::FLOAT && to != onnx::TensorProto::DOUBLE && to != onnx::TensorProto::FLOAT16;
  if (t.integer)
    for (double& v : t.values)
      if (v != kRuntimeBatch) v = std::trunc(v);
  im.set_const(n.output(0), std::move(t));
}

void import_slice(Importer& im, const onnx::NodeProto& n) {
  const HostTensor* data = im.constant(Importer::input(n, 0));
  if (!data || data->dims.size() != 1)
    return im.unsupported(n, "needs a constant 1-D input (devmap slices only shapes)");
  int64_t start = 0, end = 0, step = 1;
  if (im.opset() < 10) {
    const Dims s = Importer::attr_ints(n, "starts", {0}), e = Importer::attr_ints(n, "ends", {0});
    start = s[0];
    end = e[0];
  } else {
    const HostTensor* s = im.param(Importer::input(n, 1));
    const HostTensor* e = im.param(Importer::input(n, 2));
    const HostTensor* st = im.has_input(n, 4) ? im.param(Importer::input(n, 4)) : nullptr;
    if (!s || !e || s->numel() != 1 || e->numel() != 1 || (im.has_input(n, 4) && !st))
      return im.unsupported(n, "needs constant starts, ends and steps of one axis");
    start = static_cast<int64_t>(s->values[0]);
    end = static_cast<int64_t>(std::max(std::min(e->values[0], 9.0e18), -9.0e18));
    if (st) step = static_cast<int64_t>(st->values[0]);
  }
  const int64_t size = data->dims[0];
  if (step != 1) return im.unsupported(n, "needs step 1");
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  HostTensor t;
  t.integer = data->integer;
  t.dims = {end - start};
  t.values.assign(data->values.begin() + start, data->values.begin() + end);
  im.set_const(n.output(0), std::move(t));
}

void import_constant_of_shape(Importer& im, const onnx::NodeProto& n) {
  const HostTensor* shape = im.param(Importer::input(n, 0));
  if (!shape) return im.unsupported(n, "needs a constant shape");
  HostTensor t;
  double value = 0;
  if (const auto* a = Importer::attr(n, "value")) {
    const HostTensor v = tensor_values(a->t(), n.name());
    value = v.values.empty() ? 0.0 : v.values[0];
    t.integer = v.integer;
  }
  for (double d : shape->values) {
    if (d < 0) return im.unsupported(n, "needs a shape known before run time");
    t.dims.push_back(static_cast<int64_t>(d));
  }
  t.values.assign(static_cast<size_t>(t.numel()), value);
  im.set_const(n.output(0), std::move(t));
}

void import_transpose(Importer& im, const onnx::NodeProto& n) {
  const HostTensor* c = im.constant(Importer::input(n, 0));
  if (!c)
    return im.unsupported(n,
                          "needs a transpose of data, which devmap has not (import folds tf2onnx's NHWC layout "
                          "only as an NHWC input's Transpose (0, 3, 1, 2) and a Transpose (0, 2, 3, 1) right before "
                          "a Flatten into a MatMul or Gemm: docs/ONNX.md)");
  const size_t rank = c->dims.size();
  Dims perm = Importer::attr_ints(n, "perm", {});
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank) return im.unsupported(n, "has a perm that does not fit its input");
  HostTensor t;
  t.integer = c->integer;
  for (int64_t p : perm) t.dims.push_back(c->dims[static_cast<size_t>(p)]);
  t.values.resize(c->values.size());
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * c->dims[i];
  std::vector<int64_t> index(rank, 0);
  for (size_t k = 0; k < t.values.size(); ++k) {
    int64_t from = 0;
    for (size_t i = 0; i < rank; ++i) from += index[i] * in_strides[static_cast<size_t>(perm[i])];
    t.values[k] = c->values[static_cast<size_t>(from)];
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < t.dims[i]) break;
      index[i] = 0;
    }
  }
  im.set_const(n.output(0), std::move(t));
}

// The one node reading `value` if it is of `type` and `value` is no graph
// output; else nullptr.
const onnx::NodeProto* sole_reader(Importer& im, const std::string& value, const char* type) {
  const auto& readers = im.consumers(value);
  if (readers.size() != 1 || readers[0]->op_type() != type || im.is_graph_output(value)) return nullptr;
  return readers[0];
}

// The input of `n` other than `value`, where `n` reads `value` once.
const std::string& other_input(const onnx::NodeProto& n, const std::string& value) {
  return Importer::input(n, Importer::input(n, 0) == value ? 1 : 0);
}

bool single_value(Importer& im, const std::string& name, double want) {
  const HostTensor* c = im.constant(name);
  return c && c->numel() == 1 && std::fabs(c->values[0] - want) < 1e-6 * std::fabs(want);
}

// GELU as torch.onnx.export writes it before opset 20 (and devmap export):
// Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5, in either operand
// order: devmap's gelu. False (nothing done) where `div` starts no such chain.
bool import_gelu_pattern(Importer& im, const onnx::NodeProto& div) {
  const std::string& x = Importer::input(div, 0);
  if (!single_value(im, Importer::input(div, 1), std::sqrt(2.0))) return false;
  const onnx::NodeProto* erf = sole_reader(im, div.output(0), "Erf");
  const onnx::NodeProto* add = erf ? sole_reader(im, erf->output(0), "Add") : nullptr;
  if (!add || !single_value(im, other_input(*add, erf->output(0)), 1.0)) return false;
  const onnx::NodeProto* times_x = sole_reader(im, add->output(0), "Mul");
  if (!times_x || other_input(*times_x, add->output(0)) != x) return false;
  const onnx::NodeProto* half = sole_reader(im, times_x->output(0), "Mul");
  if (!half || !single_value(im, other_input(*half, times_x->output(0)), 0.5)) return false;
  for (const onnx::NodeProto* n : {erf, add, times_x, half}) im.skip(*n);
  const int id = im.emit(*half, "gelu", {im.data_node_any_shape(x)}, {{"approximate", std::string("none")}});
  if (id >= 0) im.set_data(half->output(0), id, im.data(x)->dims);
  return true;
}

// Add, Sub, Mul, Div: of constants, folded (same shapes, or one a single
// value); Add of two computed tensors of one shape: devmap's add.
void import_arithmetic(Importer& im, const onnx::NodeProto& n, char op) {
  const std::string &a = Importer::input(n, 0), &b = Importer::input(n, 1);
  if (Importer::attr_int(n, "broadcast", 0) != 0) return im.unsupported(n, "needs broadcasting");
  const HostTensor *ca = im.constant(a), *cb = im.constant(b);
  if (ca && cb) {
    if (ca->numel() != cb->numel() && ca->numel() != 1 && cb->numel() != 1)
      return im.unsupported(n, "needs constants of one shape, or a single value (devmap does not broadcast)");
    HostTensor t = ca->numel() >= cb->numel() ? *ca : *cb;
    t.integer = ca->integer && cb->integer;
    for (size_t i = 0; i < t.values.size(); ++i) {
      const double x = ca->values[ca->values.size() == 1 ? 0 : i], y = cb->values[cb->values.size() == 1 ? 0 : i];
      if (x == kRuntimeBatch || y == kRuntimeBatch) {
        t.values[i] = kRuntimeBatch;
        continue;
      }
      double r = op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
      if (t.integer && op == '/') r = std::trunc(r);
      t.values[i] = r;
    }
    return im.set_const(n.output(0), std::move(t));
  }
  if (op == '/' && !ca && cb && import_gelu_pattern(im, n)) return;
  const std::string what = op == '+' ? "Add" : op == '-' ? "Sub" : op == '*' ? "Mul" : "Div";
  if (op != '+') return im.unsupported(n, "needs a devmap op for " + what + " of computed tensors");
  if (ca || cb)
    return im.unsupported(n, "needs a computed tensor plus a constant (devmap adds a bias only after MatMul)");
  const std::optional<Dims> da = im.dims(a), db = im.dims(b);
  if (da && db && *da != *db)
    return im.unsupported(n, "needs inputs of one shape (devmap's add does not broadcast), has " +
                                 Shape(*da).to_string() + " and " + Shape(*db).to_string());
  const int id = im.emit(n, "add", {im.data_node(a), im.data_node(b)}, {});
  if (id >= 0) im.set_data(n.output(0), id, im.data(a)->dims);
}

}  // namespace

void register_constant_importers(std::map<std::string, NodeImporter>& table) {
  table["Constant"] = import_constant;
  table["Shape"] = import_shape;
  table["Gather"] = import_gather;
  table["Cast"] = import_cast;
  table["Slice"] = import_slice;
  table["ConstantOfShape"] = import_constant_of_shape;
  table["Transpose"] = import_transpose;
  table["Add"] = [](Importer& im, const onnx::NodeProto& n) { import_arithmetic(im, n, '+'); };
  table["Sub"] = [](Importer& im, const onnx::NodeProto& n) { import_arithmetic(im, n, '-'); };
  table["Mul"] = [](Importer& im, const onnx::NodeProto& n) { import_arithmetic(im, n, '*'); };
  table["Div"] = [](Importer& im, const onnx::NodeProto& n) { import_arithmetic(im, n, '/'); };
}

}  // namespace devmap::onnx_io
