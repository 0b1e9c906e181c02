// Name rules and suggestions used by the config loader's messages.
#include <gtest/gtest.h>

#include "coordinator/config/names.h"

namespace devmap {
namespace {

TEST(ConfigNames, EditDistance) {
  EXPECT_EQ(edit_distance("epochs", "epochs"), 0);
  EXPECT_EQ(edit_distance("epoch", "epochs"), 1);
  EXPECT_EQ(edit_distance("epcohs", "epochs"), 1);  // a swap of neighbours counts once
  EXPECT_EQ(edit_distance("ephocs", "epochs"), 2);
  EXPECT_EQ(edit_distance("", "abc"), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
}

TEST(ConfigNames, SuggestsOnlyCloseNames) {
  const std::vector<std::string> keys = {"epochs", "batch_size", "eval_batch_size", "seed"};
  EXPECT_EQ(nearest_name("epoch", keys), "epochs");
  EXPECT_EQ(nearest_name("batchsize", keys), "batch_size");
  EXPECT_EQ(nearest_name("bach_sise", keys), "batch_size");
  EXPECT_EQ(nearest_name("lr", keys), std::nullopt);
  EXPECT_EQ(nearest_name("sed", keys), "seed");
  EXPECT_EQ(nearest_name("zzzzzz", keys), std::nullopt);
  EXPECT_EQ(unknown_key_message("lr", "in train", {"a", "b"}), "unknown key 'lr' in train (valid: a, b)");
}

TEST(ConfigNames, OpNames) {
  for (const char* ok : {"conv1", "_x", "block.fc-2", "A"}) EXPECT_TRUE(is_valid_op_name(ok)) << ok;
  for (const char* bad : {"", "1conv", ".x", "-x", "a b", "a:b", "a/b"}) EXPECT_FALSE(is_valid_op_name(bad)) << bad;
}

TEST(ConfigNames, DeviceNames) {
  auto cpu3 = parse_device_name("cpu:3");
  ASSERT_TRUE(cpu3);
  EXPECT_EQ(cpu3->kind, DeviceKind::kCpu);
  EXPECT_EQ(cpu3->index, 3);
  auto gpu10 = parse_device_name("gpu:10");
  ASSERT_TRUE(gpu10);
  EXPECT_EQ(gpu10->kind, DeviceKind::kGpu);
  EXPECT_EQ(gpu10->index, 10);
  for (const char* bad : {"cpu", "cpu:", "cpu:01", "cpu:-1", "cpu:+1", "CPU:0", "tpu:0", "cpu:0 ", "cpu:99999999999"})
    EXPECT_FALSE(parse_device_name(bad)) << bad;
}

}  // namespace
}  // namespace devmap
