// Target safetensors_header: bytes as the start of a weights file. The file
// size is the input's size, and once more (a sparse or truncated file can
// claim any size) the input's last 8 bytes read as a little-endian number.
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/graph/safetensors.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_targets.h"

namespace devmap::fuzz {
namespace {

// A header the reader accepted must describe a consistent layout, and the
// writer must lay the same tensors out so that the reader reads them back.
void check_layout(const SafetensorsLayout& l, uint64_t file_size) {
  FUZZ_CHECK(l.data_start == 8 + l.header.size(), "the data follows the header");
  FUZZ_CHECK(l.data_start + l.data_bytes == file_size, "the data fills the file");
  std::vector<SafetensorsTensor> tensors;
  uint64_t at = 0;
  for (const SafetensorsEntry& e : l.entries) {
    FUZZ_CHECK(e.begin == at && e.begin <= e.end && e.end <= l.data_bytes, "entries tile the data");
    FUZZ_CHECK(l.find(e.name) == &e, "names are unique");
    at = e.end;
    tensors.push_back({e.name, e.shape, e.dtype});
  }
  FUZZ_CHECK(at == l.data_bytes, "no bytes after the last tensor");

  const SafetensorsLayout again = make_safetensors_layout(tensors, l.metadata);
  const std::string file = safetensors_head(again);
  try {
    const SafetensorsLayout read = parse_safetensors_header(file, again.data_start + again.data_bytes, "again");
    FUZZ_CHECK(read.entries.size() == l.entries.size() && read.metadata == l.metadata, "the same tensors");
    for (size_t i = 0; i < read.entries.size(); ++i) {
      const SafetensorsEntry& a = read.entries[i];
      const SafetensorsEntry& b = l.entries[i];
      FUZZ_CHECK(a.name == b.name && a.shape == b.shape && a.dtype == b.dtype, "the same names, shapes and dtypes");
      FUZZ_CHECK(a.end - a.begin == b.end - b.begin, "the same sizes");
    }
  } catch (const Error& e) {
    FUZZ_CHECK(false, e.what());  // the writer wrote what the reader refuses
  }
}

void parse(const std::string& bytes, uint64_t file_size) {
  try {
    check_layout(parse_safetensors_header(bytes, file_size, "fuzz.safetensors"), file_size);
  } catch (const Error&) {
    // a damaged or foreign file, rejected with a message
  }
}

}  // namespace

void run_safetensors_header(std::string_view data) {
  const std::string bytes(data);
  parse(bytes, bytes.size());
  if (bytes.size() >= 16) {
    uint64_t claimed = 0;
    std::memcpy(&claimed, bytes.data() + bytes.size() - 8, 8);
    if (claimed > bytes.size()) parse(bytes, claimed);
  }
}

}  // namespace devmap::fuzz
