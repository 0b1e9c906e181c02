// The ONNX ops that move or join data: Flatten, Reshape, Squeeze,
// Unsqueeze, Concat, Add. On constants they are folded (shape arithmetic);
// on data, a change of shape that keeps the batch first is a view of the
// same op's output (Importer::data_node reshapes where a consumer needs it).
#include <algorithm>

#include "coordinator/onnx/import_state.h"

namespace devmap::onnx_io {
namespace {

using Dims = std::vector<int64_t>;

int64_t product(const Dims& d, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < d.size(); ++i) p *= d[i];
  return p;
}

// `in` viewed as `dims`: a constant reshaped, or data as a view of the op
// computing it (a flatten op where the view is a vector per sample, so the
// config reads as the model does).
void reshaped(Importer& im, const onnx::NodeProto& n, const std::string& in, const Dims& dims) {
  if (const HostTensor* c = im.constant(in)) {
    HostTensor t = *c;
    t.dims = dims;
    return im.set_const(n.output(0), std::move(t));
  }
  const int src = im.data_node_any_shape(in);
  if (src < 0) return im.set_unknown(n);
  const Shape& have = im.out().graph.node(src).out_shape;
  const Dims sample(dims.begin() + 1, dims.end());
  if (have.dims() == sample || sample.size() != 1) return im.set_data(n.output(0), src, dims);
  const int id = im.emit(n, "flatten", {src}, {});
  if (id >= 0) im.set_data(n.output(0), id, dims);
}

void import_flatten(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  const std::optional<Dims> xd = im.dims(x);
  if (!xd) return im.needs_shapes(n);
  int64_t axis = Importer::attr_int(n, "axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(xd->size());
  if (im.constant(x)) {
    const Dims d(xd->begin(), xd->begin() + axis);
    return reshaped(im, n, x, {product(d), product(*xd, static_cast<size_t>(axis))});
  }
  if (axis != 1) return im.unsupported(n, "needs axis 1 (keeping the batch dimension), has " + std::to_string(axis));
  reshaped(im, n, x, {(*xd)[0], product(*xd, 1)});
}

void import_reshape(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  const HostTensor* shape = im.param(Importer::input(n, 1));
  if (!shape) return im.unsupported(n, "needs a constant shape (or one computed from shapes alone)");
  const std::optional<Dims> xd = im.dims(x);
  if (!xd) return im.needs_shapes(n);
  const bool allowzero = Importer::attr_int(n, "allowzero", 0) != 0;
  const bool is_data = !im.constant(x);
  Dims out;
  int infer = -1;
  for (size_t i = 0; i < shape->values.size(); ++i) {
    const double s = shape->values[i];
    if (s == kRuntimeBatch) {
      if (i != 0) return im.unsupported(n, "needs the batch size first in the shape");
      out.push_back((*xd)[0]);
    } else if (s == 0 && !allowzero) {
      if (i >= xd->size()) return im.unsupported(n, "has a 0 past its input's rank");
      out.push_back((*xd)[i]);
    } else if (s == -1) {
      infer = static_cast<int>(i);
      out.push_back(1);
    } else {
      out.push_back(static_cast<int64_t>(s));
    }
  }
  if (is_data) {
    // The batch stays first: [batch, ...] or [-1, ...] with the rest fixed.
    if (out.empty()) return im.unsupported(n, "needs a shape that keeps the batch dimension");
    const bool batch_first = infer == 0 || out[0] == (*xd)[0];
    if (!batch_first || (infer == 0 && std::count(shape->values.begin(), shape->values.end(), -1.0) > 1))
      return im.unsupported(n, "needs a shape that keeps the batch dimension first, has " +
                                   Shape(Dims(out.begin(), out.end())).to_string());
    const bool batch_inferred = infer == 0;
    if (infer == 0) {
      out[0] = (*xd)[0];
      infer = -1;
      for (size_t i = 1; i < shape->values.size(); ++i)
        if (shape->values[i] == -1) infer = static_cast<int>(i);
    }
    const int64_t sample = product(*xd, 1), known = product(out, 1);
    if (infer > 0) {
      if (known == 0 || sample % known != 0) return im.unsupported(n, "has a shape that does not fit its input");
      out[static_cast<size_t>(infer)] = sample / known;
    } else if (known != sample) {
      // With the batch as -1, a sample of another size moves values between samples.
      return im.unsupported(n, batch_inferred ? "needs a shape that keeps the batch dimension first, has " +
                                                    Shape(Dims(shape->values.begin(), shape->values.end())).to_string()
                                              : "has a shape that does not fit its input");
    }
  } else if (infer >= 0) {
    const int64_t known = product(out);
    if (known == 0) return im.unsupported(n, "has a shape that does not fit its input");
    out[static_cast<size_t>(infer)] = product(*xd) / known;
  }
  reshaped(im, n, x, out);
}

// The axes of Squeeze / Unsqueeze: an attribute before opset 13, an input after.
std::optional<Dims> axes_of(Importer& im, const onnx::NodeProto& n) {
  if (im.opset() < 13) return Importer::attr_ints(n, "axes", {});
  if (!im.has_input(n, 1)) return Dims{};
  const HostTensor* a = im.param(Importer::input(n, 1));
  if (!a) return std::nullopt;
  Dims d;
  for (double v : a->values) d.push_back(static_cast<int64_t>(v));
  return d;
}

void import_squeeze(Importer& im, const onnx::NodeProto& n, bool unsqueeze) {
  const std::string& x = Importer::input(n, 0);
  const std::optional<Dims> xd = im.dims(x);
  std::optional<Dims> axes = axes_of(im, n);
  if (!xd || !axes) return im.unsupported(n, "needs constant axes and its input's shape");
  const int64_t rank = static_cast<int64_t>(xd->size()) + (unsqueeze ? static_cast<int64_t>(axes->size()) : 0);
  for (int64_t& a : *axes)
    if (a < 0) a += rank;
  Dims out;
  if (unsqueeze) {
    for (int64_t i = 0, j = 0; i < rank; ++i)
      out.push_back(std::count(axes->begin(), axes->end(), i) ? 1 : (*xd)[static_cast<size_t>(j++)]);
  } else {
    for (int64_t i = 0; i < static_cast<int64_t>(xd->size()); ++i) {
      const bool drop = axes->empty() ? (*xd)[static_cast<size_t>(i)] == 1 : std::count(axes->begin(), axes->end(), i);
      if (!drop) out.push_back((*xd)[static_cast<size_t>(i)]);
    }
  }
  if (!im.constant(x) && (std::count(axes->begin(), axes->end(), 0) || (axes->empty() && !unsqueeze)))
    return im.unsupported(n, "needs to keep the batch dimension first (axis 0)");
  reshaped(im, n, x, out);
}

HostTensor concat_constants(const std::vector<const HostTensor*>& parts, int64_t axis) {
  HostTensor t;
  t.dims = parts[0]->dims;
  t.integer = parts[0]->integer;
  t.dims[static_cast<size_t>(axis)] = 0;
  for (const HostTensor* p : parts) t.dims[static_cast<size_t>(axis)] += p->dims[static_cast<size_t>(axis)];
  const int64_t outer = product(Dims(t.dims.begin(), t.dims.begin() + axis));
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor* p : parts) {
      const int64_t inner = product(p->dims, static_cast<size_t>(axis));
      t.values.insert(t.values.end(), p->values.begin() + o * inner, p->values.begin() + (o + 1) * inner);
    }
  return t;
}

void import_concat(Importer& im, const onnx::NodeProto& n) {
  std::vector<const HostTensor*> constants;
  for (const std::string& in : n.input()) constants.push_back(im.constant(in));
  int64_t axis = Importer::attr_int(n, "axis", im.opset() < 4 ? 1 : 0);
  const std::optional<Dims> d0 = im.dims(n.input(0));
  if (!d0) return im.needs_shapes(n);
  if (axis < 0) axis += static_cast<int64_t>(d0->size());
  if (std::all_of(constants.begin(), constants.end(), [](const HostTensor* c) { return c != nullptr; }))
    return im.set_const(n.output(0), concat_constants(constants, axis));
  if (std::any_of(constants.begin(), constants.end(), [](const HostTensor* c) { return c != nullptr; }))
    return im.unsupported(n, "needs every input computed (devmap concatenates data, not constants)");
  if (axis != 1) return im.unsupported(n, "needs axis 1 (channels or features), has " + std::to_string(axis));
  if (n.input_size() == 1) {
    const Importer::Value* v = im.data(n.input(0));
    if (v && v->kind == Importer::Value::Kind::kData) return im.set_data(n.output(0), v->node, v->dims);
    return im.set_unknown(n);
  }
  std::vector<int> inputs;
  Dims out = *d0;
  out[1] = 0;
  for (const std::string& in : n.input()) {
    inputs.push_back(im.data_node(in));
    const std::optional<Dims> d = im.dims(in);
    out[1] += d && d->size() > 1 ? (*d)[1] : 0;
  }
  const int id = im.emit(n, "concat", inputs, {});
  if (id >= 0) im.set_data(n.output(0), id, out);
}

}  // namespace

void register_shape_importers(std::map<std::string, NodeImporter>& table) {
  table["Flatten"] = import_flatten;
  table["Reshape"] = import_reshape;
  table["Squeeze"] = [](Importer& im, const onnx::NodeProto& n) { import_squeeze(im, n, false); };
  table["Unsqueeze"] = [](Importer& im, const onnx::NodeProto& n) { import_squeeze(im, n, true); };
  table["Concat"] = import_concat;
}

}  // namespace devmap::onnx_io
