// libFuzzer's entry point for one target, chosen at compile time by
// DEVMAP_FUZZ_TARGET (a function of fuzz_targets.h). Built only with the
// `fuzz` preset (clang, -fsanitize=fuzzer).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  devmap::fuzz::DEVMAP_FUZZ_TARGET(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
