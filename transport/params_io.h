// PARAMS_IO: the coordinator asks a worker to write its parameters (or
// optimizer state) into, or read them from, byte ranges of a file that the
// coordinator laid out (a safetensors file). Tensor bytes go straight
// between the worker's memory and the file; the coordinator never holds
// them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/file_dtype.h"

namespace devmap {

struct ParamsIo {
  // kMapGradients (data-parallel replicas): `path` names a shared-memory
  // segment, and each entry "op.param.grad" where that gradient goes in it
  // (offset and bytes): from then on a STEP with wire::kSendGradients writes
  // each gradient there as soon as its backward pass has made it, and says
  // so (GRADIENT_READY, the entry's index); a STEP with wire::kUpdateOnly
  // reads them back before the update.
  enum class Op : uint8_t { kSave = 0, kLoad = 1, kMapGradients = 2 };
  struct Entry {
    std::string name;     // "conv1.weight", or "conv1.weight.opt0" for optimizer state slot 0
    uint64_t offset = 0;  // absolute file offset
    uint64_t bytes = 0;
    FileDtype dtype = FileDtype::kF32;  // in the file; memory is float32 (converted, kI64)
  };
  Op op = Op::kSave;
  std::string path;
  std::vector<Entry> entries;
};

std::string encode_params_io(const ParamsIo& io);
ParamsIo decode_params_io(std::string_view bytes);  // throws devmap::Error on malformed bytes

}  // namespace devmap
