// Glob patterns of device_map.place over op names.
#include <gtest/gtest.h>

#include "coordinator/config/glob.h"

namespace devmap {
namespace {

TEST(ConfigGlob, StarMatchesAnyRunIncludingNone) {
  EXPECT_TRUE(glob_match("fc*", "fc"));
  EXPECT_TRUE(glob_match("fc*", "fc1"));
  EXPECT_TRUE(glob_match("fc*", "fc12.bias-x"));  // dots are ordinary characters
  EXPECT_FALSE(glob_match("fc*", "xfc1"));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("*1", "conv1"));
  EXPECT_FALSE(glob_match("*1", "conv12"));
  EXPECT_TRUE(glob_match("*conv*", "block.conv2.a"));
  EXPECT_TRUE(glob_match("a*b*c", "axxbyyc"));
  EXPECT_FALSE(glob_match("a*b*c", "axxcyyb"));
  EXPECT_TRUE(glob_match("**", "x"));
  EXPECT_TRUE(glob_match("a*a*a", "aaaa"));  // needs backtracking
}

TEST(ConfigGlob, QuestionMarkMatchesExactlyOneCharacter) {
  EXPECT_TRUE(glob_match("conv?", "conv1"));
  EXPECT_FALSE(glob_match("conv?", "conv"));
  EXPECT_FALSE(glob_match("conv?", "conv12"));
  EXPECT_TRUE(glob_match("?", "x"));
  EXPECT_TRUE(glob_match("r?lu*", "relu3"));
}

TEST(ConfigGlob, SetsRangesAndNegation) {
  EXPECT_TRUE(glob_match("relu[12]", "relu1"));
  EXPECT_TRUE(glob_match("relu[12]", "relu2"));
  EXPECT_FALSE(glob_match("relu[12]", "relu3"));
  EXPECT_FALSE(glob_match("relu[12]", "relu12"));
  EXPECT_TRUE(glob_match("fc[0-9]", "fc7"));
  EXPECT_FALSE(glob_match("fc[0-9]", "fcx"));
  EXPECT_TRUE(glob_match("[a-cx]*", "b1"));
  EXPECT_TRUE(glob_match("[a-cx]*", "x1"));
  EXPECT_FALSE(glob_match("[a-cx]*", "d1"));
  EXPECT_TRUE(glob_match("fc[!1]", "fc2"));
  EXPECT_FALSE(glob_match("fc[!1]", "fc1"));
  EXPECT_TRUE(glob_match("[]a]", "]"));  // a leading ']' is a member
  EXPECT_TRUE(glob_match("[a-]", "-"));  // a trailing '-' is itself
  EXPECT_TRUE(glob_match("*[0-9]", "block.conv9"));
}

TEST(ConfigGlob, PlainNamesMatchOnlyThemselves) {
  EXPECT_TRUE(glob_match("logits", "logits"));
  EXPECT_FALSE(glob_match("logits", "logit"));
  EXPECT_FALSE(glob_match("logits", "Logits"));  // case-sensitive
  EXPECT_FALSE(glob_match("", "x"));
  EXPECT_TRUE(glob_match("", ""));
  EXPECT_TRUE(glob_match("fc[1", "fc[1"));  // an unclosed '[' stands for itself
}

TEST(ConfigGlob, KnowsGlobsFromNamesAndRejectsUnclosedSets) {
  EXPECT_TRUE(is_glob("fc*"));
  EXPECT_TRUE(is_glob("fc?"));
  EXPECT_TRUE(is_glob("fc[12]"));
  EXPECT_FALSE(is_glob("block.fc-1"));
  EXPECT_EQ(glob_syntax_error("fc[12]"), std::nullopt);
  EXPECT_EQ(glob_syntax_error("[]]"), std::nullopt);
  EXPECT_EQ(glob_syntax_error("fc[12"), "'[' at character 3 has no closing ']'");
  EXPECT_EQ(glob_syntax_error("a[b]c[d"), "'[' at character 6 has no closing ']'");
  EXPECT_EQ(glob_syntax_error("[]"), "'[' at character 1 has no closing ']'");
}

}  // namespace
}  // namespace devmap
