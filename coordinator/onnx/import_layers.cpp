// The ONNX ops with weights or windows: Conv, Gemm, MatMul (+ Add),
// BatchNormalization, LayerNormalization, MaxPool, AveragePool,
// GlobalAveragePool.
#include <cmath>

#include "coordinator/onnx/import_state.h"

namespace devmap::onnx_io {
namespace {

using Dims = std::vector<int64_t>;

std::string dims_text(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + (d[i] < 0 ? std::string("?") : std::to_string(d[i]));
  return s + "]";
}

Dims with_batch(int64_t batch, const Shape& s) {
  Dims d{batch};
  d.insert(d.end(), s.dims().begin(), s.dims().end());
  return d;
}

bool all_equal(const Dims& d) {
  for (int64_t v : d)
    if (v != d[0]) return false;
  return true;
}

// A 2-D window's geometry: square kernel, equal strides and dilations,
// the same padding on every side. Empty `need` when devmap has it.
struct Window {
  int64_t kernel = 0, stride = 1, padding = 0, dilation = 1;
  std::string need;
};

Window window_of(const onnx::NodeProto& n, const Dims& kernel, const std::optional<Dims>& x) {
  Window w;
  const Dims strides = Importer::attr_ints(n, "strides", {1, 1});
  const Dims dilations = Importer::attr_ints(n, "dilations", {1, 1});
  Dims pads = Importer::attr_ints(n, "pads", {0, 0, 0, 0});
  const std::string auto_pad = Importer::attr_string(n, "auto_pad", "NOTSET");
  if (kernel.size() != 2) {
    w.need = "needs a 2-D window (devmap's ops are 2-D), has " + std::to_string(kernel.size()) + "-D";
    return w;
  }
  if (kernel[0] != kernel[1]) {
    w.need = "needs a square kernel, has " + std::to_string(kernel[0]) + "x" + std::to_string(kernel[1]);
    return w;
  }
  if (strides.size() != 2 || !all_equal(strides)) {
    w.need = "needs the same stride in both directions, has " + dims_text(strides);
    return w;
  }
  if (dilations.size() != 2 || !all_equal(dilations)) {
    w.need = "needs the same dilation in both directions, has " + dims_text(dilations);
    return w;
  }
  w.kernel = kernel[0];
  w.stride = strides[0];
  w.dilation = dilations[0];
  if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (!x || x->size() != 4 || (*x)[2] < 0 || (*x)[3] < 0) {
      w.need = "needs the input's size to resolve auto_pad " + auto_pad;
      return w;
    }
    pads.clear();
    for (int a = 2; a < 4; ++a) {
      const int64_t in = (*x)[a], out = (in + w.stride - 1) / w.stride;
      const int64_t total = std::max<int64_t>((out - 1) * w.stride + (w.kernel - 1) * w.dilation + 1 - in, 0);
      pads.push_back(total / 2);
      pads.push_back(total - total / 2);
    }
  } else if (auto_pad != "NOTSET") {
    w.need = "needs auto_pad NOTSET, VALID, SAME_UPPER or SAME_LOWER, has " + auto_pad;
    return w;
  }
  if (pads.size() != 4 || !all_equal(pads)) {
    w.need = "needs the same padding on every side, has pads " + dims_text(pads);
    return w;
  }
  w.padding = pads[0];
  return w;
}

// Whether output `i` of `n` is read by a node or the graph.
bool output_used(Importer& im, const onnx::NodeProto& n, int i) {
  if (i >= n.output_size() || n.output(i).empty()) return false;
  return !im.consumers(n.output(i)).empty() || im.is_graph_output(n.output(i));
}

HostTensor scaled(HostTensor t, double factor) {
  if (factor != 1.0)
    for (double& v : t.values) v = static_cast<double>(static_cast<float>(v * factor));
  return t;
}

HostTensor transposed(const HostTensor& t) {
  HostTensor r;
  r.dims = {t.dims[1], t.dims[0]};
  r.values.resize(t.values.size());
  for (int64_t i = 0; i < t.dims[0]; ++i)
    for (int64_t j = 0; j < t.dims[1]; ++j)
      r.values[static_cast<size_t>(j * t.dims[0] + i)] = t.values[static_cast<size_t>(i * t.dims[1] + j)];
  return r;
}

void import_conv(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  const HostTensor* w = im.param(Importer::input(n, 1));
  if (!w) return im.unsupported(n, "needs constant weights (W is computed)");
  if (w->dims.size() != 4)
    return im.unsupported(n, "needs a 2-D convolution (devmap's conv2d), has weights " + dims_text(w->dims));
  const HostTensor* b = nullptr;
  if (im.has_input(n, 2) && !(b = im.param(Importer::input(n, 2))))
    return im.unsupported(n, "needs a constant bias (B is computed)");
  const Dims kernel = Importer::attr_ints(n, "kernel_shape", {w->dims[2], w->dims[3]});
  const Window win = window_of(n, kernel, im.dims(x));
  if (!win.need.empty()) return im.unsupported(n, win.need);
  std::map<std::string, HostTensor> params{{"weight", *w}};
  if (b) params["bias"] = *b;
  const int id = im.emit(n, "conv2d", {im.data_node(x)},
                         {{"filters", w->dims[0]},
                          {"kernel", win.kernel},
                          {"stride", win.stride},
                          {"padding", win.padding},
                          {"dilation", win.dilation},
                          {"groups", Importer::attr_int(n, "group", 1)},
                          {"bias", b != nullptr}},
                         std::move(params));
  if (id >= 0) im.set_data(n.output(0), id, with_batch(im.data(x)->dims[0], im.out().graph.node(id).out_shape));
}

// A dense layer from `x` with weight [units, in] and an optional bias
// (one value, or one per output), whose output is ONNX value `out`; -1
// (`out` unknown) when it cannot be added.
int emit_dense(Importer& im, const onnx::NodeProto& n, const std::string& x, HostTensor weight, const HostTensor* bias,
               double bias_scale, const std::string& out) {
  const int64_t units = weight.dims[0];
  std::map<std::string, HostTensor> params{{"weight", std::move(weight)}};
  std::string need;
  if (bias) {
    HostTensor b = scaled(*bias, bias_scale);
    if (b.numel() == 1) {
      b.values.assign(static_cast<size_t>(units), b.values[0]);
      b.dims = {units};
    }
    if (b.numel() != units)
      need = "needs a bias of one value per output (" + std::to_string(units) + "), has " + dims_text(bias->dims);
    params["bias"] = std::move(b);
  }
  const std::optional<Dims> xd = im.dims(x);
  if (need.empty() && xd && xd->size() != 2)
    need = "needs [batch, features] data (devmap's dense), has " + dims_text(*xd);
  const int id = need.empty() ? im.emit(n, "dense", {im.data_node(x)}, {{"units", units}, {"bias", bias != nullptr}},
                                        std::move(params))
                              : -1;
  if (!need.empty()) im.unsupported(n, need);
  if (id >= 0)
    im.set_data(out, id, {im.data(x)->dims[0], units});
  else
    im.mark_unknown(out);
  return id;
}

void import_gemm(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  if (Importer::attr_int(n, "transA", 0) != 0) return im.unsupported(n, "needs transA = 0 (samples as rows)");
  const HostTensor* b = im.param(Importer::input(n, 1));
  if (!b) return im.unsupported(n, "needs a constant B (devmap multiplies data by weights only)");
  if (b->dims.size() != 2) return im.unsupported(n, "needs a 2-D B, has " + dims_text(b->dims));
  const HostTensor* c = nullptr;
  if (im.has_input(n, 2) && !(c = im.param(Importer::input(n, 2))))
    return im.unsupported(n, "needs a constant C (the bias)");
  if (c && c->numel() != 1 && (c->dims.size() > 2 || (c->dims.size() == 2 && c->dims[0] != 1)))
    return im.unsupported(n, "needs a bias C of one value per output, has " + dims_text(c->dims));
  const double alpha = Importer::attr_float(n, "alpha", 1.0), beta = Importer::attr_float(n, "beta", 1.0);
  HostTensor w = Importer::attr_int(n, "transB", 0) ? *b : transposed(*b);
  emit_dense(im, n, x, scaled(std::move(w), alpha), c, beta, n.output(0));
}

void import_matmul(Importer& im, const onnx::NodeProto& n) {
  const HostTensor* b = im.param(Importer::input(n, 1));
  if (!b || b->dims.size() != 2)
    return im.unsupported(n, "needs a constant 2-D B (devmap multiplies data by weights only)");
  // MatMul then Add of a constant per output: one dense layer with a bias.
  const std::string& y = n.output(0);
  const auto& readers = im.consumers(y);
  if (readers.size() == 1 && readers[0]->op_type() == "Add" && !im.is_graph_output(y)) {
    const onnx::NodeProto& add = *readers[0];
    const std::string& other = Importer::input(add, Importer::input(add, 0) == y ? 1 : 0);
    const HostTensor* bias = im.param(other);
    if (bias && bias->numel() == b->dims[1]) {
      im.skip(add);
      emit_dense(im, n, Importer::input(n, 0), transposed(*b), bias, 1.0, add.output(0));
      return;
    }
  }
  emit_dense(im, n, Importer::input(n, 0), transposed(*b), nullptr, 1.0, y);
}

void import_batch_norm(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  std::map<std::string, HostTensor> params;
  for (int i = 1; i <= 4; ++i) {
    const HostTensor* t = im.param(Importer::input(n, i));
    if (!t) return im.unsupported(n, "needs constant scale, bias, mean and variance");
    params[names[i - 1]] = *t;
  }
  if (Importer::attr_int(n, "spatial", 1) != 1) return im.unsupported(n, "needs spatial = 1 (statistics per channel)");
  for (int i = 1; i < n.output_size(); ++i)
    if (output_used(im, n, i)) return im.unsupported(n, "needs the batch statistics as outputs (training_mode)");
  // ONNX's momentum weighs the running value, devmap's (PyTorch's) the batch.
  const double momentum = std::round((1.0 - Importer::attr_float(n, "momentum", 0.9)) * 1e6) / 1e6;
  const int id =
      im.emit(n, "batch_norm", {im.data_node(x)},
              {{"eps", Importer::attr_float(n, "epsilon", 1e-5)}, {"momentum", momentum}}, std::move(params));
  if (id >= 0) im.set_data(n.output(0), id, im.data(x)->dims);
}

void import_layer_norm(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  const std::optional<Dims> xd = im.dims(x);
  if (!xd) return im.needs_shapes(n);
  int64_t axis = Importer::attr_int(n, "axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(xd->size());
  if (axis != 1)
    return im.unsupported(n, "needs normalisation over all of a sample's features (axis 1), has axis " +
                                 std::to_string(Importer::attr_int(n, "axis", -1)));
  for (int i = 1; i < n.output_size(); ++i)
    if (output_used(im, n, i)) return im.unsupported(n, "needs the mean and inverse deviation as outputs");
  std::map<std::string, HostTensor> params;
  const HostTensor* scale = im.param(Importer::input(n, 1));
  if (!scale) return im.unsupported(n, "needs a constant scale");
  params["weight"] = *scale;
  if (im.has_input(n, 2)) {
    const HostTensor* bias = im.param(Importer::input(n, 2));
    if (!bias) return im.unsupported(n, "needs a constant bias");
    params["bias"] = *bias;
  }
  const int id = im.emit(n, "layer_norm", {im.data_node(x)}, {{"eps", Importer::attr_float(n, "epsilon", 1e-5)}},
                         std::move(params));
  if (id >= 0) im.set_data(n.output(0), id, im.data(x)->dims);
}

void import_pool(Importer& im, const onnx::NodeProto& n, bool max) {
  const std::string& x = Importer::input(n, 0);
  const std::optional<Dims> xd = im.dims(x);
  const Window win = window_of(n, Importer::attr_ints(n, "kernel_shape", {}), xd);
  if (!win.need.empty()) return im.unsupported(n, win.need);
  if (win.dilation != 1) return im.unsupported(n, "needs dilation 1 (devmap's pooling has none)");
  if (max && output_used(im, n, 1)) return im.unsupported(n, "needs the indices output");
  if (!max && win.padding > 0 && Importer::attr_int(n, "count_include_pad", 0) == 0)
    return im.unsupported(n, "needs count_include_pad = 1 (devmap's average counts the padding)");
  if (Importer::attr_int(n, "ceil_mode", 0) != 0) {
    // ceil_mode matters only where it adds a window.
    bool same = xd && xd->size() == 4;
    for (int a = 2; same && a < 4; ++a) {
      const int64_t span = (*xd)[a] + 2 * win.padding - win.kernel;
      same = span >= 0 && span % win.stride == 0;
    }
    if (!same) return im.unsupported(n, "needs ceil_mode = 0 (devmap's pooling rounds the output size down)");
  }
  if (xd && xd->size() != 4) return im.unsupported(n, "needs 2-D pooling of [N, C, H, W], has " + dims_text(*xd));
  const int id = im.emit(n, max ? "max_pool2d" : "avg_pool2d", {im.data_node(x)},
                         {{"kernel", win.kernel},
                          // devmap's stride 0 is the kernel, as its configs write it
                          {"stride", win.stride == win.kernel ? 0 : win.stride},
                          {"padding", win.padding}});
  if (id >= 0) im.set_data(n.output(0), id, with_batch(im.data(x)->dims[0], im.out().graph.node(id).out_shape));
}

void import_global_avg_pool(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  const std::optional<Dims> xd = im.dims(x);
  if (xd && xd->size() != 4)
    return im.unsupported(n, "needs [N, C, H, W] (devmap's global_avg_pool), has " + dims_text(*xd));
  const int id = im.emit(n, "global_avg_pool", {im.data_node(x)}, {});
  // devmap's output is [C]; ONNX's [N, C, 1, 1] is a view of it.
  if (id >= 0) {
    const Dims& d = im.data(x)->dims;
    im.set_data(n.output(0), id, {d[0], d[1], 1, 1});
  }
}

}  // namespace

void register_layer_importers(std::map<std::string, NodeImporter>& table) {
  table["Conv"] = import_conv;
  table["Gemm"] = import_gemm;
  table["MatMul"] = import_matmul;
  table["BatchNormalization"] = import_batch_norm;
  table["LayerNormalization"] = import_layer_norm;
  table["MaxPool"] = [](Importer& im, const onnx::NodeProto& n) { import_pool(im, n, true); };
  table["AveragePool"] = [](Importer& im, const onnx::NodeProto& n) { import_pool(im, n, false); };
  table["GlobalAveragePool"] = import_global_avg_pool;
}

}  // namespace devmap::onnx_io
