// memory_limit sizes: bytes or a number with a binary unit.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "coordinator/config/size.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

TEST(ByteSize, ParsesBytesAndBinaryUnits) {
  EXPECT_EQ(parse_byte_size("0"), 0);
  EXPECT_EQ(parse_byte_size("1048576"), 1048576);
  EXPECT_EQ(parse_byte_size("100B"), 100);
  EXPECT_EQ(parse_byte_size("512KiB"), 512 * 1024);
  EXPECT_EQ(parse_byte_size("64MiB"), 64 << 20);
  EXPECT_EQ(parse_byte_size("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(parse_byte_size("2TiB"), int64_t{2} << 40);
  EXPECT_EQ(parse_byte_size("0.5KiB"), 512);
  EXPECT_EQ(parse_byte_size("1.3KiB"), 1331);  // 1331.2 rounds down
  EXPECT_EQ(parse_byte_size("4194304TiB"), int64_t{1} << 62);
}

TEST(ByteSize, RejectsEverythingElse) {
  for (const char* bad : {"", "12 MB", "12MB", "12GB", "12mib", "MiB", "-1", "-1MiB", "1e6", ".5GiB", "5.GiB", " 5",
                          "5 ", "0x10", "1,000", "4194305TiB", "99999999999999999999"})
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << "'" << bad << "'";
}

TEST(ByteSize, MemoryLimitInAConfig) {
  auto limit = [](const std::string& value) {
    const Config c =
        load_config_text(test::kMinimalModel + "devices: {cpu:0: {memory_limit: " + value + "}}\n", "m.yaml");
    return c.devices[0].memory_limit;
  };
  EXPECT_EQ(limit("64MiB"), 64 << 20);
  EXPECT_EQ(limit("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(limit("1048576"), 1048576);
  EXPECT_EQ(limit("\"512KiB\""), 512 << 10);
  EXPECT_EQ(limit("0"), 0);
  EXPECT_EQ(test::error_of([&] { limit("12 MB"); }),
            "m.yaml:8:33: devices.cpu:0.memory_limit must be a number of bytes or a size such as 64MiB or 1.5GiB, got "
            "'12 MB' (units: B, KiB, MiB, GiB, TiB)");
  EXPECT_EQ(test::error_of([&] { limit("[1]"); }),
            "m.yaml:8:33: devices.cpu:0.memory_limit must be a number of bytes or a size such as 64MiB or 1.5GiB, got "
            "a list (units: B, KiB, MiB, GiB, TiB)");
}

}  // namespace
}  // namespace devmap
