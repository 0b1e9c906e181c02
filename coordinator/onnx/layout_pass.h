// The layout pass of devmap import: folds the transposes tf2onnx writes
// around a Keras (channels_last) model's data, so that the model imports
// as devmap's NCHW graph. devmap has no transpose op; it folds exactly two
// patterns and leaves every other Transpose of data in the model, where
// import lists it as unsupported:
//
//  1. An NHWC graph input [N, H, W, C] whose one reader changes it to NCHW:
//     a Transpose with perm (0, 3, 1, 2), or (C = 1, the same bytes) a
//     Reshape to [N, 1, H, W]. The input becomes [N, C, H, W] and the
//     reader goes: devmap then reads the images as N x C x H x W, as it
//     reads every data set (for C > 1 the user must give NCHW arrays; an
//     NHWC array is refused by its shape unless H = W = C).
//  2. A Transpose with perm (0, 2, 3, 1) of [N, C, H, W] data (back to
//     NHWC) whose one reader is a Flatten (axis 1) or a Reshape to
//     [N, C*H*W], whose one reader is a dense layer (MatMul, or Gemm with
//     transA 0) with a float32 initializer B that nothing else reads. The
//     Transpose goes and B's rows (columns for Gemm's transB 1) are
//     permuted from H,W,C to C,H,W order, so that devmap's NCHW flatten
//     times the new B is the model's NHWC flatten times the old one,
//     value for value.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace devmap::onnx_io {

// Rewrites `model` in place as above; returns one line per fold, for the
// user ("input images: NHWC [N, 6, 6, 3] read as NCHW [N, 3, 6, 6] ...").
// Never throws for a pattern it does not fold: that Transpose stays.
std::vector<std::string> fold_nhwc_layout(onnx::ModelProto& model);

}  // namespace devmap::onnx_io
