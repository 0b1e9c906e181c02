// NumPy arrays from .npy files and .npz archives, read without copying
// where the file allows: a .npy file and a stored (np.savez) member of a
// .npz are mapped from the file; a compressed (np.savez_compressed) member
// is inflated once into a scratch file (sample_file.h) and mapped from it.
// Little-endian,
// C-order arrays only; every other case is a devmap::Error (kInvalidInput)
// that names the file and says how to write it so that it reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/data/sample_file.h"

namespace devmap {

enum class NpyType { kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kF32, kF64 };

// "uint8", "float32", ...: NumPy's names.
const char* npy_type_name(NpyType type);
size_t npy_type_bytes(NpyType type);
bool npy_type_is_integer(NpyType type);

struct NpyArray {
  std::string where;  // "x.npy", or "d.npz:images": for messages
  NpyType type = NpyType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;      // numel() elements of `type`, little-endian, C order
  std::shared_ptr<const void> owner;  // keeps `data` alive (the file's mapping)
  // The same bytes to read by offset: `data` is at `file_offset` of `fd`.
  std::shared_ptr<FileDescriptor> fd;
  uint64_t file_offset = 0;

  int64_t numel() const;
  std::string shape_text() const;  // "(60000, 28, 28)"
};

// Whether `spec` names a NumPy file: FILE.npy, FILE.npz or FILE.npz:KEY.
bool is_numpy_path(const std::string& spec);
// The file `spec` names: FILE for FILE.npz:KEY, else `spec` itself.
std::string numpy_file_of(const std::string& spec);

// Opens FILE.npy, or a member of FILE.npz: FILE.npz:KEY names it, else the
// first of `keys` the archive holds (e.g. {"images", "x"}), else its only
// member. An archive without the member lists what it holds.
NpyArray open_numpy_array(const std::string& spec, const std::vector<std::string>& keys);

// The members of a .npz archive, in archive order, without ".npy".
std::vector<std::string> npz_members(const std::string& path);

}  // namespace devmap
