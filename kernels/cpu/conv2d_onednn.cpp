#include "kernels/cpu/conv2d_onednn.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/base/error.h"
#include "core/exec/cpu_path.h"
#include "kernels/cpu/conv2d_direct_weight_gradient.h"
#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/onednn_runtime.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/relu.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace devmap::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// oneDNN's scratchpad for a call, per thread, grown as needed, on a
// 64-byte boundary.
memory scratchpad_for(const memory::desc& d) {
  constexpr size_t kAlignment = 64;
  thread_local std::vector<std::byte> bytes;
  if (bytes.size() < d.get_size() + kAlignment) bytes.resize(d.get_size() + kAlignment);
  void* start = bytes.data();
  size_t space = bytes.size();
  return memory(d, onednn_engine(), std::align(kAlignment, d.get_size(), start, space));
}

memory::dims dims(std::initializer_list<int64_t> v) {
  return memory::dims(v);
}

// The primitives for groups of n samples, and the reorders between their
// layouts and NCHW / OIHW.
struct Primitives {
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  memory::desc x_user, y_user, w_user;
};

// Every shape's primitives, made once per process (oneDNN generates code for
// each). The group of G samples comes first and fixes the weights' layouts;
// smaller groups use the same ones.
class Plans {
 public:
  static Plans& instance() {
    static Plans plans;
    return plans;
  }

  // The primitives for groups of n samples of a convolution whose full
  // groups hold `group`.
  const Primitives& get(const ConvGeometry& g, bool bias, int64_t group, int64_t n) {
    std::lock_guard lock(mutex_);
    const Primitives& full = find_or_make(g, bias, group, nullptr);
    return n == group ? full : find_or_make(g, bias, n, &full);
  }

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool,
                         int64_t>;

  const Primitives& find_or_make(const ConvGeometry& g, bool bias, int64_t n, const Primitives* full) {
    const Key key{g.channels, g.height,   g.width, g.filters, g.kernel, g.stride,
                  g.padding,  g.dilation, g.out_h, g.out_w,   bias,     n};
    auto it = plans_.find(key);
    return it != plans_.end() ? *it->second : make(key, g, bias, n, full);
  }

  const Primitives& make(const Key& key, const ConvGeometry& g, bool bias, int64_t n, const Primitives* full) {
    dnnl::engine& eng = onednn_engine();
    const auto f32 = memory::data_type::f32;
    const memory::dims x_dims = dims({n, g.channels, g.height, g.width});
    const memory::dims y_dims = dims({n, g.filters, g.out_h, g.out_w});
    const memory::dims w_dims = dims({g.filters, g.channels, g.kernel, g.kernel});
    const memory::dims strides = dims({g.stride, g.stride}), dilation = dims({g.dilation - 1, g.dilation - 1});
    const memory::dims pad_l = dims({g.padding, g.padding});
    // The right padding that makes oneDNN's output size ours.
    const int64_t span = g.dilation * (g.kernel - 1) + 1;
    const memory::dims pad_r = dims({(g.out_h - 1) * g.stride + span - g.height - g.padding,
                                     (g.out_w - 1) * g.stride + span - g.width - g.padding});
    const memory::desc x_any(x_dims, f32, Tag::any), y_any(y_dims, f32, Tag::any), w_any(w_dims, f32, Tag::any);
    const memory::desc bias_md = bias ? memory::desc(dims({g.filters}), f32, Tag::x) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto algo = dnnl::algorithm::convolution_direct;

    const memory::desc w_fwd = full != nullptr ? full->fwd_pd.weights_desc() : w_any;
    auto fwd_pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, x_any, w_fwd, bias_md, y_any, strides,
                                        dilation, pad_l, pad_r),
        attr, eng);
    const memory::desc w_bwd = full != nullptr ? full->bwd_data_pd.weights_desc() : w_any;
    auto bwd_data_pd = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(algo, x_any, w_bwd, y_any, strides, dilation, pad_l, pad_r), attr, eng,
        fwd_pd);
    auto bwd_weights_pd = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(algo, x_any, w_any, y_any, strides, dilation, pad_l, pad_r), attr, eng,
        fwd_pd);
    auto p = std::make_unique<Primitives>(
        Primitives{fwd_pd, bwd_data_pd, bwd_weights_pd, dnnl::convolution_forward(fwd_pd),
                   dnnl::convolution_backward_data(bwd_data_pd), dnnl::convolution_backward_weights(bwd_weights_pd),
                   memory::desc(x_dims, f32, Tag::nchw), memory::desc(y_dims, f32, Tag::nchw),
                   memory::desc(w_dims, f32, Tag::oihw)});
    return *plans_.emplace(key, std::move(p)).first->second;
  }

  std::mutex mutex_;
  std::map<Key, std::unique_ptr<Primitives>> plans_;
};

// Throws unless oneDNN's layout of a tensor fits the region the workspace
// layout gave it.
void check_fits(const memory::desc& d, int64_t floats, const char* what) {
  if (d.get_size() > static_cast<size_t>(floats) * sizeof(float))
    throw_runtime(std::string("onednn conv2d: oneDNN's layout of the ") + what + " needs " +
                  std::to_string(d.get_size()) + " bytes, more than the " +
                  std::to_string(floats * static_cast<int64_t>(sizeof(float))) + " the workspace layout gives it");
}

// `user` (NCHW / OIHW at `data`) in the primitive's layout `want`: the user's
// memory itself when the layouts agree, else a copy in `blocked`.
memory in_layout(const memory::desc& want, const memory::desc& user, const float* data, float* blocked,
                 dnnl::stream& s) {
  memory u(user, onednn_engine(), const_cast<float*>(data));
  if (want == user) return u;
  memory b(want, onednn_engine(), blocked);
  dnnl::reorder(u, b).execute(s, u, b);
  return b;
}

// The weights (OIHW at `w`) in a primitive's layout `want`, blocked into
// `region` (`floats` long) when the layouts differ.
memory weights_in(const memory::desc& want, const memory::desc& user, const float* w, float* region, int64_t floats) {
  check_fits(want, floats, "weights");
  return in_layout(want, user, w, region, onednn_thread_stream());
}

// A primitive's output in layout `have`: written straight to the user's
// memory when the layouts agree, else to `blocked` and reordered after.
struct Output {
  memory result, user;
  Output(const memory::desc& have, const memory::desc& user_md, float* data, float* blocked)
      : result(have == user_md ? memory(user_md, onednn_engine(), data) : memory(have, onednn_engine(), blocked)),
        user(user_md, onednn_engine(), data) {}
  void finish(dnnl::stream& s) {
    if (result.get_data_handle() != user.get_data_handle()) dnnl::reorder(result, user).execute(s, result, user);
  }
};

// Runs fn(lane workspace, the lane's first sample, the group's first
// sample, its samples) for every group of every lane, in order within a
// lane, the lanes on the pool; each thread calls oneDNN single-threaded.
template <class Fn>
void for_each_group(ThreadPool* pool, int64_t batch, int64_t lanes, const OneDnnConvLayout& lay, float* workspace,
                    const Fn& fn) {
  parallel_for(pool, lanes, [&](int64_t l0, int64_t l1) {
    onednn_single_threaded();
    for (int64_t l = l0; l < l1; ++l) {
      float* ws = workspace + lay.shared + l * lay.lane;
      const auto [begin, end] = split_range(batch, lanes, l);
      for (int64_t n0 = begin; n0 < end; n0 += lay.group) fn(ws, begin, n0, std::min(lay.group, end - n0));
    }
  });
}

}  // namespace

OneDnnConv::OneDnnConv(const ConvGeometry& g) : g_(g), lay_(g) {
  if (const std::string no = onednn_unsupported(g); !no.empty())
    throw_runtime("onednn conv2d cannot run with " + no + " (the algorithm should not have been chosen)");
}

std::string OneDnnConv::implementation() const {
  const Primitives& p = Plans::instance().get(g_, false, lay_.group, lay_.group);
  return "onednn:" + std::string(p.fwd_pd.impl_info_str());
}

std::string OneDnnConv::backward_implementation() const {
  if (conv_direct_weight_gradient_runs(g_)) return implementation() + "+dW:" + path_kernel_name("direct");
  return implementation();
}

void OneDnnConv::forward(ThreadPool* pool, int64_t batch, int64_t lanes, const float* x, const float* w,
                         const float* bias, float* y, float* workspace, bool relu_output) const {
  onednn_single_threaded();
  const bool has_bias = bias != nullptr;
  const Primitives& full = Plans::instance().get(g_, has_bias, lay_.group, lay_.group);
  const memory weights = weights_in(full.fwd_pd.weights_desc(), full.w_user, w, workspace, lay_.weights);
  const int64_t x_sample = g_.channels * g_.in_plane(), y_sample = g_.filters * g_.positions();
  for_each_group(pool, batch, lanes, lay_, workspace, [&](float* ws, int64_t, int64_t n0, int64_t n) {
    dnnl::stream& s = onednn_thread_stream();
    const Primitives& p = Plans::instance().get(g_, has_bias, lay_.group, n);
    check_fits(p.fwd_pd.src_desc(), lay_.dst - lay_.src, "input");
    check_fits(p.fwd_pd.dst_desc(), lay_.dw_blocked - lay_.dst, "output");
    const memory src = in_layout(p.fwd_pd.src_desc(), p.x_user, x + n0 * x_sample, ws + lay_.src, s);
    Output dst(p.fwd_pd.dst_desc(), p.y_user, y + n0 * y_sample, ws + lay_.dst);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src},
                                            {DNNL_ARG_WEIGHTS, weights},
                                            {DNNL_ARG_DST, dst.result},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad_for(p.fwd_pd.scratchpad_desc())}};
    if (has_bias) args.emplace(DNNL_ARG_BIAS, memory(p.fwd_pd.bias_desc(), onednn_engine(), const_cast<float*>(bias)));
    p.fwd.execute(s, args);
    dst.finish(s);
    if (relu_output) relu_in_place(y + n0 * y_sample, n * y_sample);
  });
}

void OneDnnConv::backward_input(ThreadPool* pool, int64_t batch, int64_t lanes, const float* dy, const float* w,
                                float* dx, float* workspace) const {
  onednn_single_threaded();
  const Primitives& full = Plans::instance().get(g_, false, lay_.group, lay_.group);
  const memory weights =
      weights_in(full.bwd_data_pd.weights_desc(), full.w_user, w, workspace + lay_.weights, lay_.weights);
  const int64_t x_sample = g_.channels * g_.in_plane(), y_sample = g_.filters * g_.positions();
  for_each_group(pool, batch, lanes, lay_, workspace, [&](float* ws, int64_t, int64_t n0, int64_t n) {
    dnnl::stream& s = onednn_thread_stream();
    const Primitives& p = Plans::instance().get(g_, false, lay_.group, n);
    check_fits(p.bwd_data_pd.diff_dst_desc(), lay_.dw_blocked - lay_.dst, "output gradient");
    check_fits(p.bwd_data_pd.diff_src_desc(), lay_.dst - lay_.src, "input gradient");
    const memory d_dst = in_layout(p.bwd_data_pd.diff_dst_desc(), p.y_user, dy + n0 * y_sample, ws + lay_.dst, s);
    Output d_src(p.bwd_data_pd.diff_src_desc(), p.x_user, dx + n0 * x_sample, ws + lay_.src);
    p.bwd_data.execute(s, {{DNNL_ARG_DIFF_DST, d_dst},
                           {DNNL_ARG_WEIGHTS, weights},
                           {DNNL_ARG_DIFF_SRC, d_src.result},
                           {DNNL_ARG_SCRATCHPAD, scratchpad_for(p.bwd_data_pd.scratchpad_desc())}});
    d_src.finish(s);
  });
}

void OneDnnConv::backward_weights(ThreadPool* pool, int64_t batch, int64_t lanes, const float* x, const float* dy,
                                  float* dw, bool accumulate, float* workspace) const {
  if (conv_direct_weight_gradient_runs(g_))
    return conv_direct_weight_gradient(pool, DirectWeightGradient{&g_, batch, x, dy, dw, accumulate});
  onednn_single_threaded();
  const int64_t x_sample = g_.channels * g_.in_plane(), y_sample = g_.filters * g_.positions();
  const int64_t n_w = g_.filters * g_.patch();
  for_each_group(pool, batch, lanes, lay_, workspace, [&](float* ws, int64_t begin, int64_t n0, int64_t n) {
    dnnl::stream& s = onednn_thread_stream();
    float* dw_lane = ws + lay_.dw;
    const float* dw_group = ws + lay_.dw_group;
    const Primitives& p = Plans::instance().get(g_, false, lay_.group, n);
    const auto& pd = p.bwd_weights_pd;
    check_fits(pd.src_desc(), lay_.dst - lay_.src, "input");
    check_fits(pd.diff_dst_desc(), lay_.dw_blocked - lay_.dst, "output gradient");
    check_fits(pd.diff_weights_desc(), lay_.weights, "weight gradient");
    const memory src = in_layout(pd.src_desc(), p.x_user, x + n0 * x_sample, ws + lay_.src, s);
    const memory d_dst = in_layout(pd.diff_dst_desc(), p.y_user, dy + n0 * y_sample, ws + lay_.dst, s);
    // The lane's first group writes the lane's gradient, later ones go
    // through dw_group and are added in order.
    float* target = n0 == begin ? dw_lane : ws + lay_.dw_group;
    Output d_w(pd.diff_weights_desc(), p.w_user, target, ws + lay_.dw_blocked);
    p.bwd_weights.execute(s, {{DNNL_ARG_SRC, src},
                              {DNNL_ARG_DIFF_DST, d_dst},
                              {DNNL_ARG_DIFF_WEIGHTS, d_w.result},
                              {DNNL_ARG_SCRATCHPAD, scratchpad_for(pd.scratchpad_desc())}});
    d_w.finish(s);
    if (n0 != begin)
      for (int64_t i = 0; i < n_w; ++i) dw_lane[i] += dw_group[i];
  });
  // dW [+]= dW_0 + dW_1 + ..., the lanes in order (core/exec/kernel.h): the
  // samples' whole gradient, then added to what came before.
  parallel_for_elements(pool, n_w, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float sum = workspace[lay_.shared + lay_.dw + i];
      for (int64_t l = 1; l < lanes; ++l) sum += workspace[lay_.shared + l * lay_.lane + lay_.dw + i];
      dw[i] = accumulate ? dw[i] + sum : sum;
    }
  });
}

}  // namespace devmap::cpu
