#include "coordinator/data/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

#include "coordinator/data/sample_file.h"
#include "core/base/error.h"

namespace devmap {
namespace {

// A file mapped read-only for as long as the mapping object lives; its
// descriptor stays open for reading by offset (SampleFile).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_invalid("cannot open '" + path + "': " + std::strerror(errno));
    map(std::make_shared<FileDescriptor>(fd), path);
  }
  MappedFile(std::shared_ptr<FileDescriptor> fd, const std::string& what) { map(std::move(fd), what); }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::shared_ptr<FileDescriptor>& fd() const { return fd_; }

 private:
  void map(std::shared_ptr<FileDescriptor> fd, const std::string& what) {
    fd_ = std::move(fd);
    struct stat st {};
    if (::fstat(fd_->get(), &st) != 0 || !S_ISREG(st.st_mode)) throw_invalid("'" + what + "' is not a regular file");
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_->get(), 0);
    if (p == MAP_FAILED) throw_runtime("cannot map '" + what + "': " + std::strerror(errno));
    data_ = static_cast<const uint8_t*>(p);
  }

  std::shared_ptr<FileDescriptor> fd_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The array of the .npy bytes at [p, p + n) of `file`'s mapping.
NpyArray parse_npy(const std::string& where, const uint8_t* p, size_t n, const std::shared_ptr<MappedFile>& file);

uint16_t le16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const uint8_t* p) {
  return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The value text of 'key' in the header's dict literal, e.g. "'<f4'" or
// "(60000, 28, 28)"; empty when the key is not there.
std::string dict_value(const std::string& header, const std::string& key) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t v = header.find(':', k);
  if (v == std::string::npos) return "";
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  if (v < header.size() && header[v] == '(') return header.substr(v, header.find(')', v) + 1 - v);
  size_t end = v;
  if (v < header.size() && (header[v] == '\'' || header[v] == '"')) end = header.find(header[v], v + 1) + 1;
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(v, end - v);
}

struct TypeCode {
  const char* descr;  // as NumPy writes it on a little-endian machine
  NpyType type;
};
constexpr TypeCode kTypes[] = {{"|u1", NpyType::kU8},  {"|i1", NpyType::kI8},  {"<u2", NpyType::kU16},
                               {"<i2", NpyType::kI16}, {"<u4", NpyType::kU32}, {"<i4", NpyType::kI32},
                               {"<u8", NpyType::kU64}, {"<i8", NpyType::kI64}, {"<f4", NpyType::kF32},
                               {"<f8", NpyType::kF64}};

NpyType parse_descr(const std::string& where, std::string descr) {
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"')) descr = descr.substr(1, descr.size() - 2);
  if (descr == "<u1" || descr == "u1") descr = "|u1";
  if (descr == "<i1" || descr == "i1") descr = "|i1";
  for (const TypeCode& t : kTypes)
    if (descr == t.descr) return t.type;
  const bool big = !descr.empty() && descr[0] == '>';
  throw_invalid("'" + where + "' holds elements of type '" + descr + "'" +
                (big ? ", big-endian: write it with arr.astype(arr.dtype.newbyteorder('<'))"
                     : ": devmap reads integers (u1, i1, u2, i2, u4, i4, u8, i8) and floats (f4, f8)"));
}

std::vector<int64_t> parse_shape(const std::string& where, const std::string& text) {
  std::vector<int64_t> shape;
  if (text.size() < 2 || text.front() != '(') throw_invalid("'" + where + "' has no shape in its .npy header");
  const char* p = text.data() + 1;
  const char* end = text.data() + text.size() - 1;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == ',')) ++p;
    if (p >= end) break;
    int64_t d = 0;
    auto [q, ec] = std::from_chars(p, end, d);
    if (ec != std::errc() || d < 0) throw_invalid("'" + where + "' has a bad shape in its .npy header: " + text);
    shape.push_back(d);
    p = q;
  }
  return shape;
}

// The array whose .npy bytes are [p, p + n).
NpyArray parse_npy(const std::string& where, const uint8_t* p, size_t n, const std::shared_ptr<MappedFile>& file) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (n < 10 || std::memcmp(p, kMagic, sizeof kMagic) != 0)
    throw_invalid("'" + where + "' is not a .npy array (no \\x93NUMPY magic): write it with numpy.save");
  const int major = p[6];
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = le16(p + 8), start = 10;
  } else if ((major == 2 || major == 3) && n >= 12) {
    header_len = le32(p + 8), start = 12;
  } else {
    throw_invalid("'" + where + "' is .npy format version " + std::to_string(major) + ", which devmap does not read");
  }
  if (start + header_len > n) throw_invalid("'" + where + "' is truncated inside its .npy header");
  const std::string header(reinterpret_cast<const char*>(p + start), header_len);
  NpyArray a;
  a.where = where;
  a.type = parse_descr(where, dict_value(header, "descr"));
  if (dict_value(header, "fortran_order") == "True")
    throw_invalid("'" + where + "' is in Fortran order: write it with numpy.ascontiguousarray(arr)");
  a.shape = parse_shape(where, dict_value(header, "shape"));
  const uint64_t elements = static_cast<uint64_t>(a.numel());
  const uint64_t bytes = elements * npy_type_bytes(a.type);
  const size_t data_start = start + header_len;
  if (elements > (uint64_t{1} << 40) || data_start + bytes > n)
    throw_invalid("'" + where + "' is truncated: its header announces " + a.shape_text() + " " + npy_type_name(a.type) +
                  " (" + std::to_string(bytes) + " bytes) but " + std::to_string(n - data_start) + " bytes follow");
  a.data = p + data_start;
  a.owner = file;
  a.fd = file->fd();
  a.file_offset = static_cast<uint64_t>(a.data - file->data());
  return a;
}

// One member of a zip archive, from its central directory.
struct ZipMember {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint64_t compressed = 0, size = 0, local_header = 0;
};

std::vector<ZipMember> zip_members(const std::string& path, const MappedFile& file) {
  const uint8_t* p = file.data();
  const size_t n = file.size();
  // The end-of-central-directory record: within the last 64 KiB + 22 bytes.
  size_t eocd = std::string::npos;
  for (size_t i = n >= 22 ? n - 22 : 0; n >= 22; --i) {
    if (le32(p + i) == 0x06054b50) {
      eocd = i;
      break;
    }
    if (i == 0 || n - i > 65557) break;
  }
  if (eocd == std::string::npos)
    throw_invalid("'" + path + "' is not a .npz archive (no zip directory): write it with numpy.savez");
  const uint64_t entries = le16(p + eocd + 10);
  uint64_t at = le32(p + eocd + 16);
  std::vector<ZipMember> members;
  for (uint64_t e = 0; e < entries; ++e) {
    if (at + 46 > n || le32(p + at) != 0x02014b50) throw_invalid("'" + path + "' has a damaged zip directory");
    ZipMember m;
    m.method = le16(p + at + 10);
    m.compressed = le32(p + at + 20);
    m.size = le32(p + at + 24);
    const size_t name_len = le16(p + at + 28), extra_len = le16(p + at + 30), comment_len = le16(p + at + 32);
    m.local_header = le32(p + at + 42);
    if (at + 46 + name_len + extra_len > n) throw_invalid("'" + path + "' has a damaged zip directory");
    m.name.assign(reinterpret_cast<const char*>(p + at + 46), name_len);
    // Zip64 (NumPy writes it): 0xffffffff fields come from extra block 1, in order.
    const uint8_t* x = p + at + 46 + name_len;
    for (size_t off = 0; off + 4 <= extra_len;) {
      const uint16_t id = le16(x + off), len = le16(x + off + 2);
      if (id == 0x0001) {
        size_t f = off + 4;
        auto next = [&](uint64_t& field) {
          if (field != 0xffffffffu) return;
          if (f + 8 > off + 4 + len) throw_invalid("'" + path + "' has a damaged zip64 field");
          field = le64(x + f);
          f += 8;
        };
        next(m.size);
        next(m.compressed);
        next(m.local_header);
      }
      off += 4 + len;
    }
    members.push_back(std::move(m));
    at += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

std::string member_key(const std::string& name) {
  return ends_with(name, ".npy") ? name.substr(0, name.size() - 4) : name;
}

std::string listed(const std::vector<ZipMember>& members) {
  std::string s;
  for (const ZipMember& m : members) s += (s.empty() ? "" : ", ") + member_key(m.name);
  return s.empty() ? "nothing" : s;
}

// A deflated member inflated into a scratch file, mapped.
std::shared_ptr<MappedFile> inflate_member(const std::string& where, const uint8_t* src, const ZipMember& m) {
  std::shared_ptr<FileDescriptor> out = scratch_file(where);
  std::vector<uint8_t> chunk(size_t{1} << 20);
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw_runtime("'" + where + "': zlib could not start");
  uint64_t in_left = m.compressed, out_done = 0;
  int rc = Z_OK;
  z.next_in = const_cast<uint8_t*>(src);
  while (rc == Z_OK) {
    const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
    z.avail_in = in_chunk;
    z.next_out = chunk.data();
    z.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&z, Z_NO_FLUSH);
    in_left -= in_chunk - z.avail_in;
    const size_t produced = chunk.size() - z.avail_out;
    if (rc == Z_OK || rc == Z_STREAM_END) write_all(out->get(), chunk.data(), produced, where);
    out_done += produced;
    if (rc == Z_OK && in_chunk == z.avail_in && produced == 0) break;  // no progress
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out_done != m.size)
    throw_invalid("'" + where + "' is damaged: its deflated data ends early");
  return std::make_shared<MappedFile>(out, where);
}

NpyArray open_npz_member(const std::string& path, const std::string& key, const std::vector<std::string>& keys) {
  auto file = std::make_shared<MappedFile>(path);
  const std::vector<ZipMember> members = zip_members(path, *file);
  const ZipMember* found = nullptr;
  auto find = [&](const std::string& k) -> const ZipMember* {
    for (const ZipMember& m : members)
      if (member_key(m.name) == k) return &m;
    return nullptr;
  };
  if (!key.empty()) {
    found = find(key);
    if (!found) throw_invalid("'" + path + "' has no array '" + key + "' (it holds " + listed(members) + ")");
  } else {
    for (const std::string& k : keys)
      if ((found = find(k))) break;
    if (!found && members.size() == 1) found = &members.front();
    if (!found) {
      std::string wanted;
      for (const std::string& k : keys) wanted += (wanted.empty() ? "" : " or ") + ("'" + k + "'");
      throw_invalid("'" + path + "' has no array " + wanted + " (it holds " + listed(members) + "): name one as " +
                    path + ":KEY");
    }
  }
  const std::string where = path + ":" + member_key(found->name);
  const uint8_t* p = file->data();
  const uint64_t at = found->local_header;
  if (at + 30 > file->size() || le32(p + at) != 0x04034b50) throw_invalid("'" + where + "' is damaged (local header)");
  const uint64_t data = at + 30 + le16(p + at + 26) + le16(p + at + 28);
  if (data + found->compressed > file->size()) throw_invalid("'" + where + "' is truncated");
  if (found->method == 0) return parse_npy(where, p + data, static_cast<size_t>(found->size), file);
  if (found->method != 8)
    throw_invalid("'" + where + "' is compressed with zip method " + std::to_string(found->method) +
                  ": write it with numpy.savez or numpy.savez_compressed");
  const std::shared_ptr<MappedFile> inflated = inflate_member(where, p + data, *found);
  return parse_npy(where, inflated->data(), inflated->size(), inflated);
}

}  // namespace

const char* npy_type_name(NpyType type) {
  switch (type) {
    case NpyType::kU8: return "uint8";
    case NpyType::kI8: return "int8";
    case NpyType::kU16: return "uint16";
    case NpyType::kI16: return "int16";
    case NpyType::kU32: return "uint32";
    case NpyType::kI32: return "int32";
    case NpyType::kU64: return "uint64";
    case NpyType::kI64: return "int64";
    case NpyType::kF32: return "float32";
    case NpyType::kF64: return "float64";
  }
  return "?";
}

size_t npy_type_bytes(NpyType type) {
  switch (type) {
    case NpyType::kU8:
    case NpyType::kI8: return 1;
    case NpyType::kU16:
    case NpyType::kI16: return 2;
    case NpyType::kU32:
    case NpyType::kI32:
    case NpyType::kF32: return 4;
    default: return 8;
  }
}

bool npy_type_is_integer(NpyType type) {
  return type != NpyType::kF32 && type != NpyType::kF64;
}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n = d != 0 && n > std::numeric_limits<int64_t>::max() / d ? -1 : n * d;
  return n < 0 ? std::numeric_limits<int64_t>::max() : n;
}

std::string NpyArray::shape_text() const {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

bool is_numpy_path(const std::string& spec) {
  return ends_with(spec, ".npy") || ends_with(spec, ".npz") || spec.find(".npz:") != std::string::npos;
}

std::string numpy_file_of(const std::string& spec) {
  const size_t colon = spec.rfind(".npz:");
  return colon == std::string::npos ? spec : spec.substr(0, colon + 4);
}

NpyArray open_numpy_array(const std::string& spec, const std::vector<std::string>& keys) {
  if (ends_with(spec, ".npy")) {
    const auto file = std::make_shared<MappedFile>(spec);
    return parse_npy(spec, file->data(), file->size(), file);
  }
  const size_t colon = spec.rfind(".npz:");
  if (colon != std::string::npos) return open_npz_member(spec.substr(0, colon + 4), spec.substr(colon + 5), keys);
  return open_npz_member(spec, "", keys);
}

std::vector<std::string> npz_members(const std::string& path) {
  MappedFile file(path);
  std::vector<std::string> keys;
  for (const ZipMember& m : zip_members(path, file)) keys.push_back(member_key(m.name));
  return keys;
}

}  // namespace devmap
