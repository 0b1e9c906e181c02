// Byte sizes as a config writes them: memory_limit: 2GiB.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace devmap {

// The units parse_byte_size accepts, for messages: "B, KiB, MiB, GiB, TiB".
extern const char* const kByteSizeUnits;

// A non-negative size: a whole number of bytes ("1048576") or a decimal
// number directly followed by a binary unit ("512KiB", "64MiB", "1.5GiB",
// "100B"); fractions of a byte round down. Returns nullopt for anything else
// (negative numbers, spaces, decimal units such as "MB", over 2^62 bytes).
std::optional<int64_t> parse_byte_size(std::string_view text);

}  // namespace devmap
