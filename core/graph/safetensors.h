// The safetensors file format: an 8-byte little-endian header length, a
// JSON header {"name": {"dtype": "F32", "shape": [...], "data_offsets":
// [begin, end]}, ..., "__metadata__": {"key": "value"}}, then the raw
// data. Offsets are relative to the end of the header. F32 tensors, and I64
// for integer state (core/graph/file_dtype.h).
//
// The reader validates everything before anyone trusts a byte: a damaged
// or foreign file is a devmap::Error naming the file and the problem,
// never a crash or garbage weights.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/file_dtype.h"
#include "core/graph/shape.h"

namespace devmap {

struct SafetensorsEntry {
  std::string name;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
  FileDtype dtype = FileDtype::kF32;
};

// A tensor to lay out: its name, shape and stored type.
struct SafetensorsTensor {
  std::string name;
  Shape shape;
  FileDtype dtype = FileDtype::kF32;
};

struct SafetensorsLayout {
  std::vector<SafetensorsEntry> entries;  // in data order
  std::map<std::string, std::string> metadata;
  std::string header;       // the JSON text, padded with spaces to a multiple of 8 bytes
  uint64_t data_start = 0;  // 8 + header size
  uint64_t data_bytes = 0;

  const SafetensorsEntry* find(const std::string& name) const;
};

// Lays out `tensors` contiguously in the given order, with `metadata`.
SafetensorsLayout make_safetensors_layout(const std::vector<SafetensorsTensor>& tensors,
                                          const std::map<std::string, std::string>& metadata = {});

// The first data_start bytes of the file `layout` describes: the header's
// length (8 bytes, little-endian), then the header.
std::string safetensors_head(const SafetensorsLayout& layout);

// Parses and validates the header of `bytes` (at least the header; the file
// size is `file_size`). Throws devmap::Error (kInvalidInput) prefixed with
// `name`.
SafetensorsLayout parse_safetensors_header(const std::string& bytes, uint64_t file_size, const std::string& name);

// Reads and validates the header of a file.
SafetensorsLayout read_safetensors_layout(const std::string& path);

}  // namespace devmap
