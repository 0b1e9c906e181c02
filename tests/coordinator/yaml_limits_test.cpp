// The bounds a config's text meets before yaml-cpp parses it
// (coordinator/config/yaml/limits.h) and the anchor/alias ban (yaml_document.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/config/yaml/document.h"
#include "coordinator/config/yaml/limits.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

std::string nesting_error(const std::string& text) {
  return test::error_of([&] { check_yaml_nesting(text, YamlSource("c.yaml")); });
}

std::string nested_flow(int levels) {
  return "a: " + std::string(static_cast<size_t>(levels), '[') + std::string(static_cast<size_t>(levels), ']') + "\n";
}

// `levels` mappings, each indented one space more than its parent.
std::string nested_blocks(int levels) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += std::string(static_cast<size_t>(i), ' ') + "k" + std::to_string(i) + ":\n";
  return s;
}

TEST(YamlNesting, TheExampleConfigsAreWellInside) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DEVMAP_SOURCE_DIR) + "/configs")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(nesting_error(text.str()), "(no error)") << entry.path();
  }
}

TEST(YamlNesting, FlowBracketsCountUpToTheLimit) {
  // "a:" is one indentation level; the brackets add theirs.
  EXPECT_EQ(nesting_error(nested_flow(kMaxYamlNesting - 1)), "(no error)");
  EXPECT_EQ(nesting_error(nested_flow(kMaxYamlNesting)),
            "c.yaml:1:67: the config nests deeper than 64 levels of brackets and indentation here; a config needs "
            "far fewer (see Limits in docs/CONFIG.md)");
}

TEST(YamlNesting, IndentationLevelsCount) {
  EXPECT_EQ(nesting_error(nested_blocks(kMaxYamlNesting)), "(no error)");
  EXPECT_NE(nesting_error(nested_blocks(kMaxYamlNesting + 1)).find("c.yaml:65:65: the config nests deeper"),
            std::string::npos);
}

TEST(YamlNesting, CompactSequencesCountEachDash) {
  std::string deep;
  for (int i = 0; i < kMaxYamlNesting; ++i) deep += "- ";
  EXPECT_NE(nesting_error(deep + "x\n"), "(no error)");
  EXPECT_EQ(nesting_error("- - - x\n- - y\n"), "(no error)");
}

TEST(YamlNesting, QuotesCommentsAndBlockScalarsDoNotCount) {
  const std::string many(100, '[');
  EXPECT_EQ(nesting_error("a: '" + many + "'\n"), "(no error)");
  EXPECT_EQ(nesting_error("a: \"" + many + "\\\"" + many + "\"\n"), "(no error)");
  EXPECT_EQ(nesting_error("a: 'it''s " + many + "'\n"), "(no error)");
  EXPECT_EQ(nesting_error("a: 1  # " + many + "\n"), "(no error)");
  EXPECT_EQ(nesting_error("a: |\n  " + many + "\n  " + many + "\nb: 2\n"), "(no error)");
  EXPECT_EQ(nesting_error("a: \"multi\n  line " + many + "\"\n"), "(no error)");
  // Brackets inside a plain scalar are text, not nesting.
  EXPECT_EQ(nesting_error("a: fc[12]" + many + "\n"), "(no error)");
}

TEST(YamlNesting, ClosedBracketsFreeTheirLevels) {
  std::string s;
  for (int i = 0; i < 1000; ++i) s += "k" + std::to_string(i) + ": [[[1]], {a: [2]}]\n";
  EXPECT_EQ(nesting_error(s), "(no error)");
}

TEST(YamlDocument, AnchorsAndAliasesAreRefusedWhereTheyStand) {
  const std::string msg = test::error_of([] { parse_yaml_document("a: &x 1\nb: *x\n", YamlSource("c.yaml")); });
  EXPECT_EQ(msg.rfind("c.yaml:1:4: YAML anchors and aliases (&name, *name, <<: *name) are not supported", 0), 0u)
      << msg;
  EXPECT_EQ(test::error_of([] { parse_yaml_document("a: '&x *y'\nb: c*d\n", YamlSource("c.yaml")); }), "(no error)");
}

}  // namespace
}  // namespace devmap
