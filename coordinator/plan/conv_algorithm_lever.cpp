#include "coordinator/plan/conv_algorithm_lever.h"

#include "core/base/format_bytes.h"
#include "core/graph/ops/conv2d_cpu_layout.h"

namespace devmap {

std::vector<LeanerConv> convs_leaner_as_gemm(const Config& config) {
  std::vector<LeanerConv> out;
  for (const Node& n : config.graph.nodes()) {
    if (n.op() != "conv2d" || n.input_shapes.empty()) continue;
    if (n.attrs.has("algorithm") && n.attrs.get_string("algorithm") != "auto") continue;
    const ConvGeometry g = ConvGeometry::of(n.attrs, n.input_shapes[0], n.out_shape);
    if (conv_algorithm_of(n.attrs, g) != ConvAlgorithm::kOneDnn) continue;
    const LeanerConv c{n.name, conv_cpu_workspace_bytes(g, ConvAlgorithm::kGemm, kConvCpuMaxLanes),
                       conv_cpu_workspace_bytes(g, ConvAlgorithm::kOneDnn, kConvCpuMaxLanes)};
    if (c.gemm_bytes < c.onednn_bytes) out.push_back(c);
  }
  return out;
}

std::string gemm_lever_text(const std::vector<LeanerConv>& convs) {
  std::string names, sizes;
  for (size_t k = 0; k < convs.size(); ++k) {
    names += (k ? ", " : "") + convs[k].op;
    sizes += (k ? ", " : "") + format_bytes(convs[k].gemm_bytes) + " of workspace at " +
             std::to_string(kConvCpuMaxLanes) + " samples against oneDNN's " + format_bytes(convs[k].onednn_bytes);
  }
  return names + " as im2col + GEMM (`algorithm: gemm`): " + sizes + ", the same FLOPs";
}

void apply_gemm_convs(Config& config, const std::vector<LeanerConv>& convs) {
  for (const LeanerConv& c : convs) {
    const int i = config.graph.find(c.op);
    if (i < 0) continue;
    config.graph.node(i).attrs.set("algorithm", std::string("gemm"));
    config.auto_algorithms[c.op] = "gemm";
  }
}

}  // namespace devmap
