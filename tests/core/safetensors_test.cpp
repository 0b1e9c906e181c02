#include "core/graph/safetensors.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace devmap {
namespace {

// A whole file: length, header, `data_bytes` zero bytes.
std::string file_with(const std::string& header, uint64_t data_bytes) {
  std::string f(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return f + header + std::string(data_bytes, '\0');
}

std::string error_of(const std::string& file) {
  try {
    parse_safetensors_header(file, file.size(), "w.safetensors");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    return e.what();
  }
  return "";
}

TEST(Safetensors, LayoutRoundTrips) {
  SafetensorsLayout l =
      make_safetensors_layout({{"conv1.weight", Shape{32, 1, 5, 5}}, {"conv1.bias", Shape{32}}}, {{"step", "42"}});
  EXPECT_EQ(l.header.size() % 8, 0u);
  EXPECT_EQ(l.data_bytes, (800u + 32u) * 4u);
  SafetensorsLayout r = parse_safetensors_header(file_with(l.header, l.data_bytes), l.data_start + l.data_bytes, "w");
  ASSERT_EQ(r.entries.size(), 2u);
  ASSERT_NE(r.find("conv1.bias"), nullptr);
  EXPECT_EQ(r.find("conv1.bias")->shape, (Shape{32}));
  EXPECT_EQ(r.find("conv1.bias")->begin, 3200u);
  EXPECT_EQ(r.metadata.at("step"), "42");
}

// Integer counts (batch_norm's num_batches_tracked) are I64, 8 bytes an
// element, as PyTorch writes them.
TEST(Safetensors, I64TensorsRoundTripWithTheirSize) {
  SafetensorsLayout l = make_safetensors_layout(
      {{"bn.running_mean", Shape{4}}, {"bn.num_batches_tracked", Shape{}, FileDtype::kI64}, {"fc.bias", Shape{2}}});
  EXPECT_NE(l.header.find(R"("bn.num_batches_tracked":{"dtype":"I64","shape":[])"), std::string::npos) << l.header;
  EXPECT_EQ(l.data_bytes, 16u + 8u + 8u);
  SafetensorsLayout r = parse_safetensors_header(file_with(l.header, l.data_bytes), l.data_start + l.data_bytes, "w");
  ASSERT_NE(r.find("bn.num_batches_tracked"), nullptr);
  EXPECT_EQ(r.find("bn.num_batches_tracked")->dtype, FileDtype::kI64);
  EXPECT_EQ(r.find("fc.bias")->dtype, FileDtype::kF32);
  EXPECT_EQ(r.find("fc.bias")->begin, 24u);
  // An I64 tensor whose bytes are counted as F32 is an error.
  EXPECT_NE(error_of(file_with(R"({"n":{"dtype":"I64","shape":[2],"data_offsets":[0,8]}})", 8)).find("(16 bytes)"),
            std::string::npos);
}

TEST(Safetensors, DamagedOrForeignFilesAreClearErrors) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(error_of(file_with(ok, 8)), "");
  std::string huge(8, '\xff');
  EXPECT_NE(error_of(huge + "{}").find("header length"), std::string::npos);
  EXPECT_NE(error_of("abc").find("shorter than 8 bytes"), std::string::npos);
  EXPECT_NE(error_of(file_with(ok, 4)).find("outside the 4 data bytes"), std::string::npos);
  EXPECT_NE(error_of(file_with(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)).find("shape [3]"),
            std::string::npos);
  EXPECT_NE(error_of(file_with(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", 8)).find("F16"),
            std::string::npos);
  EXPECT_NE(error_of(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                               12))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(error_of(file_with(ok, 12)).find("4 bytes after the last tensor"), std::string::npos);
  EXPECT_NE(error_of(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8)).find("malformed"),
            std::string::npos);
  EXPECT_NE(error_of(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("a":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})",
                               8))
                .find("twice"),
            std::string::npos);
}

TEST(Safetensors, EveryTruncationIsAnErrorNotACrash) {
  SafetensorsLayout l = make_safetensors_layout({{"w", Shape{3, 3}}, {"b", Shape{3}}});
  std::string f = file_with(l.header, l.data_bytes);
  for (size_t n = 0; n < 8 + l.header.size(); ++n) EXPECT_FALSE(error_of(f.substr(0, n)).empty()) << n;
}

}  // namespace
}  // namespace devmap
