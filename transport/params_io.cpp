#include "transport/params_io.h"

#include "core/base/bytes.h"

namespace devmap {

std::string encode_params_io(const ParamsIo& io) {
  ByteWriter w;
  w.put<uint8_t>(static_cast<uint8_t>(io.op));
  w.put_string(io.path);
  w.put<uint32_t>(static_cast<uint32_t>(io.entries.size()));
  for (const auto& e : io.entries) {
    w.put_string(e.name);
    w.put<uint64_t>(e.offset);
    w.put<uint64_t>(e.bytes);
    w.put<uint8_t>(static_cast<uint8_t>(e.dtype));
  }
  return w.bytes();
}

ParamsIo decode_params_io(std::string_view bytes) {
  ByteReader r(bytes);
  ParamsIo io;
  uint8_t op = r.get<uint8_t>();
  if (op > 2) throw_runtime("malformed PARAMS_IO: unknown operation");
  io.op = static_cast<ParamsIo::Op>(op);
  io.path = r.get_string();
  uint32_t n = r.get_count(21);
  for (uint32_t i = 0; i < n; ++i) {
    ParamsIo::Entry e;
    e.name = r.get_string();
    e.offset = r.get<uint64_t>();
    e.bytes = r.get<uint64_t>();
    uint8_t dtype = r.get<uint8_t>();
    if (dtype > 1) throw_runtime("malformed PARAMS_IO: unknown dtype");
    e.dtype = static_cast<FileDtype>(dtype);
    io.entries.push_back(std::move(e));
  }
  if (!r.done()) throw_runtime("malformed PARAMS_IO: trailing bytes");
  return io;
}

}  // namespace devmap
