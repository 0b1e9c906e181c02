// `auto` placement's conv-algorithm lever (auto_levers.h): a conv2d whose
// `algorithm` the config leaves to auto and which resolves to oneDNN's
// direct convolution (core/graph/ops/conv2d_cpu_layout.h) can run as
// im2col + GEMM instead, with the same FLOPs and less workspace: for
// conv1 of the reference CNN (one channel), 0.6 MiB at 22 samples against
// oneDNN's 7.4 MiB at 8. A Winograd conv is never switched: GEMM would
// multiply 2.8x to 5x more, which the FLOP-based step estimate does not
// see.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/config/config.h"

namespace devmap {

// A conv the lever would switch, with its workspace at 8 samples (the most
// lanes the CPU kernel runs) both ways.
struct LeanerConv {
  std::string op;
  uint64_t gemm_bytes = 0, onednn_bytes = 0;
};

// The conv2d ops of `config` the lever would switch to GEMM: `algorithm`
// unset or auto, resolving to oneDNN, GEMM's workspace smaller. In graph
// order.
std::vector<LeanerConv> convs_leaner_as_gemm(const Config& config);

// "conv1 as im2col + GEMM (`algorithm: gemm`): 612.5 KiB of workspace at
// 8 samples against oneDNN's 7.39 MiB, the same FLOPs".
std::string gemm_lever_text(const std::vector<LeanerConv>& convs);

// `config` with each of `convs` given `algorithm: gemm`, kept in
// config.auto_algorithms (--emit-map writes it).
void apply_gemm_convs(Config& config, const std::vector<LeanerConv>& convs);

}  // namespace devmap
