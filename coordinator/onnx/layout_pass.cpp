#include "coordinator/onnx/layout_pass.h"

#include <onnx/shape_inference/implementation.h>

#include <map>
#include <set>

#include "coordinator/onnx/onnx_tensor.h"

namespace devmap::onnx_io {
namespace {

using Dims = std::vector<int64_t>;

Dims dims_of(const onnx::ValueInfoProto& v) {
  Dims d;
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return d;
  for (const auto& dim : v.type().tensor_type().shape().dim()) d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  return d;
}

// "[N, 6, 6, 3]": an unknown size (the batch) as N.
std::string dims_text(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + (d[i] < 0 ? std::string("N") : std::to_string(d[i]));
  return s + "]";
}

bool fixed_sample(const Dims& d) {
  for (size_t i = 1; i < d.size(); ++i)
    if (d[i] <= 0) return false;
  return true;
}

class LayoutPass {
 public:
  explicit LayoutPass(onnx::ModelProto& model) : g_(*model.mutable_graph()) {
    // ONNX's shape inference, on a copy: the shapes of the values around
    // each Transpose (tf2onnx writes no value_info); data propagation
    // follows the Shape, Gather, Slice, Concat with which tf2onnx computes
    // a Flatten's shape.
    try {
      onnx::ModelProto copy = model;
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, true));
      for (const auto& v : copy.graph().value_info()) shapes_[v.name()] = dims_of(v);
      for (const auto& v : copy.graph().output()) shapes_[v.name()] = dims_of(v);
    } catch (const std::exception&) {
      // Without shapes nothing folds; import lists the transposes.
    }
    for (const auto& v : g_.input()) shapes_[v.name()] = dims_of(v);
    for (const auto& t : g_.initializer()) initializers_[t.name()] = &t;
    for (const auto& v : g_.output()) outputs_.insert(v.name());
    for (int i = 0; i < g_.node_size(); ++i)
      for (const std::string& in : g_.node(i).input())
        if (!in.empty()) readers_[in].push_back(i);
  }

  std::vector<std::string> run() {
    for (int i = 0; i < g_.input_size(); ++i)
      if (!initializers_.count(g_.input(i).name())) fold_input(*g_.mutable_input(i));
    for (int i = 0; i < g_.node_size(); ++i)
      if (g_.node(i).op_type() == "Transpose" && perm(g_.node(i)) == Dims{0, 2, 3, 1}) fold_before_dense(i);
    if (!removed_.empty()) drop_removed();
    return notes_;
  }

 private:
  // The one node reading `value` (once), where `value` is no graph output;
  // -1 otherwise.
  int sole_reader(const std::string& value) const {
    auto it = readers_.find(value);
    if (it == readers_.end() || it->second.size() != 1 || outputs_.count(value)) return -1;
    return removed_.count(it->second[0]) ? -1 : it->second[0];
  }

  static Dims perm(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute())
      if (a.name() == "perm") return Dims(a.ints().begin(), a.ints().end());
    return {};
  }

  static int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
    for (const auto& a : n.attribute())
      if (a.name() == name) return a.i();
    return fallback;
  }

  Dims shape(const std::string& value) const {
    auto it = shapes_.find(value);
    return it == shapes_.end() ? Dims{} : it->second;
  }

  // Pattern 1: input [N, H, W, C] -> Transpose (0, 3, 1, 2), or Reshape to
  // [N, 1, H, W] where C = 1.
  void fold_input(onnx::ValueInfoProto& input) {
    const Dims d = dims_of(input);
    if (d.size() != 4 || !fixed_sample(d)) return;
    const int r = sole_reader(input.name());
    if (r < 0) return;
    const onnx::NodeProto& n = g_.node(r);
    if (n.input_size() < 1 || n.input(0) != input.name() || n.output_size() != 1 || outputs_.count(n.output(0))) return;
    std::string how;
    if (n.op_type() == "Transpose" && perm(n) == Dims{0, 3, 1, 2}) {
      how = "Transpose";
    } else if (n.op_type() == "Reshape" && d[3] == 1) {
      const Dims out = shape(n.output(0));
      if (out.size() != 4 || out[1] != 1 || out[2] != d[1] || out[3] != d[2] || (out[0] >= 0 && out[0] != d[0])) return;
      how = "Reshape";
    } else {
      return;
    }
    // [N, H, W, C] -> [N, C, H, W], keeping each dimension's name or size.
    auto* dims = input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    const onnx::TensorShapeProto::Dimension c = dims->Get(3);
    for (int k = 3; k > 1; --k) *dims->Mutable(k) = dims->Get(k - 1);
    *dims->Mutable(1) = c;
    rename_reads(n.output(0), input.name());
    removed_.insert(r);
    const Dims nchw{d[0], d[3], d[1], d[2]};
    notes_.push_back("input " + input.name() + ": NHWC " + dims_text(d) + " read as NCHW " + dims_text(nchw) +
                     " (its " + how + " " + name_of(r) + " folded)" +
                     (d[3] == 1 ? ": one channel, the same bytes"
                                : ": give the images as N x C x H x W (numpy: x.transpose(0, 3, 1, 2))"));
  }

  // Pattern 2: [N, C, H, W] -> Transpose (0, 2, 3, 1) -> Flatten or
  // Reshape to [N, C*H*W] -> MatMul or Gemm with an initializer B.
  void fold_before_dense(int t) {
    const onnx::NodeProto& tr = g_.node(t);
    if (tr.input_size() != 1 || tr.output_size() != 1) return;
    const Dims x = shape(tr.input(0));
    if (x.size() != 4 || !fixed_sample(x)) return;
    const int64_t c = x[1], hw = x[2] * x[3], k = c * hw;
    const int f = sole_reader(tr.output(0));
    if (f < 0) return;
    const onnx::NodeProto& flat = g_.node(f);
    if (flat.input_size() < 1 || flat.input(0) != tr.output(0) || flat.output_size() != 1) return;
    if (flat.op_type() == "Flatten") {
      if (attr_int(flat, "axis", 1) != 1) return;
    } else if (flat.op_type() == "Reshape") {
      // Where inference leaves the shape unknown, import checks it: the
      // Reshape of the NCHW data must keep the batch first and give the
      // dense layer its [N, C*H*W], or the model is listed as unsupported.
      const Dims out = shape(flat.output(0));
      if (!out.empty() &&
          (out.size() != 2 || (out[1] >= 0 && out[1] != k) || (out[0] >= 0 && x[0] >= 0 && out[0] != x[0])))
        return;
    } else {
      return;
    }
    const int d = sole_reader(flat.output(0));
    if (d < 0) return;
    const onnx::NodeProto& dense = g_.node(d);
    if (dense.input_size() < 2 || dense.input(0) != flat.output(0)) return;
    bool by_columns = false;
    if (dense.op_type() == "Gemm") {
      if (attr_int(dense, "transA", 0) != 0) return;
      by_columns = attr_int(dense, "transB", 0) != 0;
    } else if (dense.op_type() != "MatMul") {
      return;
    }
    auto init = initializers_.find(dense.input(1));
    if (init == initializers_.end() || readers_.at(dense.input(1)).size() != 1) return;
    const onnx::TensorProto& b = *init->second;
    if (b.data_type() != onnx::TensorProto::FLOAT || b.dims_size() != 2 || b.dims(by_columns ? 1 : 0) != k) return;
    const HostTensor old = tensor_values(b, "initializer");
    const int64_t units = b.dims(by_columns ? 0 : 1);
    std::vector<float> permuted(old.values.size());
    // Feature (c, h, w) is at c*HW + hw in devmap's flatten, hw*C + c in NHWC's.
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t to = ch * hw + p, from = p * c + ch;
        for (int64_t u = 0; u < units; ++u) {
          const int64_t at_to = by_columns ? u * k + to : to * units + u;
          const int64_t at_from = by_columns ? u * k + from : from * units + u;
          permuted[static_cast<size_t>(at_to)] = static_cast<float>(old.values[static_cast<size_t>(at_from)]);
        }
      }
    const std::string b_name = b.name();
    for (auto& init_b : *g_.mutable_initializer())
      if (init_b.name() == b_name) init_b = float_tensor(b_name, old.dims, permuted);
    g_.mutable_node(f)->set_input(0, tr.input(0));
    removed_.insert(t);
    notes_.push_back("Transpose " + name_of(t) + " (NCHW to NHWC before " + flat.op_type() + " " + name_of(f) +
                     ") folded into " + dense.op_type() + " " + name_of(d) + ": the " +
                     (by_columns ? "columns" : "rows") + " of its weights permuted from H,W,C to C,H,W order");
  }

  std::string name_of(int i) const {
    const onnx::NodeProto& n = g_.node(i);
    return n.name().empty() ? n.op_type() + " #" + std::to_string(i) : n.name();
  }

  void rename_reads(const std::string& from, const std::string& to) {
    for (int r : readers_[from]) {
      onnx::NodeProto& n = *g_.mutable_node(r);
      for (int k = 0; k < n.input_size(); ++k)
        if (n.input(k) == from) n.set_input(k, to);
      readers_[to].push_back(r);
    }
    readers_.erase(from);
  }

  void drop_removed() {
    std::set<std::string> gone;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < g_.node_size(); ++i) {
      if (removed_.count(i))
        gone.insert(g_.node(i).output().begin(), g_.node(i).output().end());
      else
        *kept.Add() = g_.node(i);
    }
    g_.mutable_node()->Swap(&kept);
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> info;
    for (const auto& v : g_.value_info())
      if (!gone.count(v.name())) *info.Add() = v;
    g_.mutable_value_info()->Swap(&info);
  }

  onnx::GraphProto& g_;
  std::map<std::string, Dims> shapes_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, std::vector<int>> readers_;  // value -> the nodes reading it, once per input slot
  std::set<std::string> outputs_;
  std::set<int> removed_;
  std::vector<std::string> notes_;
};

}  // namespace

std::vector<std::string> fold_nhwc_layout(onnx::ModelProto& model) {
  return LayoutPass(model).run();
}

}  // namespace devmap::onnx_io
