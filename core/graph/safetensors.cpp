#include "core/graph/safetensors.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/base/error.h"

namespace devmap {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // as the reference implementation

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A strict reader of the JSON subset a safetensors header uses: objects,
// arrays, strings (with escapes), non-negative integers. Depth is bounded.
class JsonReader {
 public:
  JsonReader(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw_invalid(where_ + ": malformed header at byte " + std::to_string(pos_) + ": " + what);
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  bool peek(char c) {
    ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c == '\\') {
        if (pos_ >= s_.size()) fail("unterminated escape");
        char e = s_[pos_++];
        switch (e) {
          case '"':
          case '\\':
          case '/': out += e; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            if (pos_ + 4 > s_.size()) fail("short \\u escape");
            unsigned v = 0;
            for (int k = 0; k < 4; ++k) {
              int d = hex_digit(s_[pos_++]);
              if (d < 0) fail("bad \\u escape");
              v = v * 16 + static_cast<unsigned>(d);
            }
            out += v < 0x80 ? static_cast<char>(v) : '?';  // names are ASCII; keep lengths sane
            break;
          }
          default: fail("bad escape");
        }
      } else {
        out += c;
      }
    }
    expect('"');
    return out;
  }
  uint64_t integer() {
    ws();
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_])))
      fail("expected a non-negative integer");
    uint64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      uint64_t d = static_cast<uint64_t>(s_[pos_++] - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) fail("integer too large");
      v = v * 10 + d;
    }
    return v;
  }
  std::vector<uint64_t> int_array() {
    expect('[');
    std::vector<uint64_t> out;
    if (peek(']')) {
      ++pos_;
      return out;
    }
    for (;;) {
      out.push_back(integer());
      if (out.size() > 64) fail("array too long");
      if (peek(',')) {
        ++pos_;
        continue;
      }
      expect(']');
      return out;
    }
  }
  // Calls on_key(key) for each member; on_key must consume the value.
  template <typename F>
  void object(F on_key) {
    expect('{');
    if (peek('}')) {
      ++pos_;
      return;
    }
    for (;;) {
      std::string key = string();
      expect(':');
      on_key(key);
      if (peek(',')) {
        ++pos_;
        continue;
      }
      expect('}');
      return;
    }
  }
  void end() {
    ws();
    if (pos_ != s_.size()) fail("trailing characters");
  }

 private:
  const std::string& s_;
  std::string where_;
  size_t pos_ = 0;
};

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const SafetensorsEntry* SafetensorsLayout::find(const std::string& name) const {
  for (const SafetensorsEntry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

SafetensorsLayout make_safetensors_layout(const std::vector<SafetensorsTensor>& tensors,
                                          const std::map<std::string, std::string>& metadata) {
  SafetensorsLayout l;
  l.metadata = metadata;
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      h += (first ? "" : ",") + json_quote(k) + ":" + json_quote(v);
      first = false;
    }
    h += "}";
  }
  uint64_t off = 0;
  for (const auto& [name, shape, dtype] : tensors) {
    uint64_t bytes = static_cast<uint64_t>(shape.numel()) * file_dtype_bytes(dtype);
    l.entries.push_back({name, shape, off, off + bytes, dtype});
    if (h.size() > 1) h += ",";
    h += json_quote(name) + ":{\"dtype\":\"" + file_dtype_name(dtype) + "\",\"shape\":[";
    for (int i = 0; i < shape.rank(); ++i) h += (i ? "," : "") + std::to_string(shape[i]);
    h += "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + bytes) + "]}";
    off += bytes;
  }
  h += "}";
  h.append((8 - h.size() % 8) % 8, ' ');
  l.header = h;
  l.data_start = 8 + h.size();
  l.data_bytes = off;
  return l;
}

std::string safetensors_head(const SafetensorsLayout& layout) {
  std::string head(8, '\0');
  const uint64_t n = layout.header.size();
  for (int i = 0; i < 8; ++i) head[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return head + layout.header;
}

SafetensorsLayout parse_safetensors_header(const std::string& bytes, uint64_t file_size, const std::string& name) {
  if (bytes.size() < 8 || file_size < 8) throw_invalid(name + ": not a safetensors file (shorter than 8 bytes)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (n > kMaxHeader || n > file_size - 8)
    throw_invalid(name + ": header length " + std::to_string(n) + " is larger than the file allows (" +
                  std::to_string(file_size) + " bytes)");
  if (bytes.size() < 8 + n) throw_invalid(name + ": truncated header");
  SafetensorsLayout l;
  l.header = bytes.substr(8, n);
  l.data_start = 8 + n;
  l.data_bytes = file_size - l.data_start;
  JsonReader r(l.header, name);
  r.object([&](const std::string& key) {
    if (key == "__metadata__") {
      r.object([&](const std::string& mk) { l.metadata[mk] = r.string(); });
      return;
    }
    SafetensorsEntry e;
    e.name = key;
    std::string dtype;
    bool has_shape = false, has_offsets = false;
    r.object([&](const std::string& field) {
      if (field == "dtype") {
        dtype = r.string();
      } else if (field == "shape") {
        std::vector<int64_t> dims;
        for (uint64_t d : r.int_array()) {
          if (d > (1ull << 40)) r.fail("dimension too large in '" + key + "'");
          dims.push_back(static_cast<int64_t>(d));
        }
        e.shape = Shape(std::move(dims));
        has_shape = true;
      } else if (field == "data_offsets") {
        auto o = r.int_array();
        if (o.size() != 2) r.fail("data_offsets of '" + key + "' must hold two numbers");
        e.begin = o[0];
        e.end = o[1];
        has_offsets = true;
      } else {
        r.fail("unknown field '" + field + "' in '" + key + "'");
      }
    });
    if (dtype == "I64")
      e.dtype = FileDtype::kI64;
    else if (dtype != "F32")
      throw_invalid(name + ": tensor '" + key + "' has dtype '" + dtype + "'; devmap reads F32 and I64 only");
    if (!has_shape || !has_offsets) throw_invalid(name + ": tensor '" + key + "' lacks shape or data_offsets");
    if (e.begin > e.end || e.end > l.data_bytes)
      throw_invalid(name + ": tensor '" + key + "' has offsets [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + "] outside the " + std::to_string(l.data_bytes) + " data bytes");
    double elems = 1;
    for (int64_t d : e.shape.dims()) elems *= static_cast<double>(d);
    const double elem_bytes = static_cast<double>(file_dtype_bytes(e.dtype));
    if (elems * elem_bytes != static_cast<double>(e.end - e.begin))
      throw_invalid(name + ": tensor '" + key + "' has shape " + e.shape.to_string() + " (" +
                    std::to_string(static_cast<uint64_t>(elems * elem_bytes)) + " bytes) but " +
                    std::to_string(e.end - e.begin) + " bytes of data");
    for (const SafetensorsEntry& other : l.entries)
      if (other.name == key) throw_invalid(name + ": tensor '" + key + "' appears twice");
    l.entries.push_back(std::move(e));
  });
  r.end();
  std::sort(l.entries.begin(), l.entries.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  uint64_t at = 0;
  for (const SafetensorsEntry& e : l.entries) {
    if (e.begin != at)
      throw_invalid(name + ": tensor '" + e.name + "' starts at byte " + std::to_string(e.begin) + ", expected " +
                    std::to_string(at) + " (tensors overlap or leave a hole)");
    at = e.end;
  }
  if (at != l.data_bytes)
    throw_invalid(name + ": " + std::to_string(l.data_bytes - at) + " bytes after the last tensor");
  return l;
}

SafetensorsLayout read_safetensors_layout(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw_invalid("cannot open weights '" + path + "': " + std::strerror(errno));
  uint64_t size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);
  std::string head(8, '\0');
  f.read(head.data(), 8);
  if (!f) throw_invalid(path + ": not a safetensors file (shorter than 8 bytes)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(head[static_cast<size_t>(i)]);
  if (n > kMaxHeader || n > size - 8) return parse_safetensors_header(head, size, path);  // throws the message
  head.resize(8 + n);
  f.read(head.data() + 8, static_cast<std::streamsize>(n));
  if (!f) throw_invalid(path + ": truncated header");
  return parse_safetensors_header(head, size, path);
}

}  // namespace devmap
