// Table-driven: every malformed config in tests/configs/bad must fail with
// exactly the message tests/configs/bad/expected.txt gives for it.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "coordinator/config/loader.h"
#include "tests/coordinator/temp_dir.h"

namespace devmap {
namespace {

const std::string kBadDir = std::string(DEVMAP_SOURCE_DIR) + "/tests/configs/bad/";

struct BadCase {
  std::string name;      // "unknown_key.yaml"
  std::string expected;  // with {FILE} replaced by the path
  std::string path;
};

// Names the case in gtest's failure output.
void PrintTo(const BadCase& c, std::ostream* out) {
  *out << c.name;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// The registry's op names as the unknown-op message lists them.
std::string known_ops() {
  std::string known;
  for (const std::string& op : known_op_names()) known += (known.empty() ? "" : ", ") + op;
  return known;
}

std::vector<BadCase> load_table() {
  std::vector<BadCase> cases;
  std::ifstream in(kBadDir + "expected.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      cases.push_back({"MALFORMED_LINE", line, ""});
      continue;
    }
    BadCase c;
    c.name = line.substr(0, tab);
    c.path = kBadDir + c.name;
    c.expected = replace_all(line.substr(tab + 1), "{FILE}", c.path);
    c.expected = replace_all(c.expected, "{KNOWN_OPS}", known_ops());
    cases.push_back(c);
  }
  return cases;
}

std::string error_of(const std::function<void()>& load, ErrorKind* kind = nullptr) {
  try {
    load();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "(no error)";
}

class BadConfigTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfigTest, FailsWithTheExpectedMessage) {
  const BadCase& c = GetParam();
  ASSERT_NE(c.name, "MALFORMED_LINE") << "expected.txt line without a tab: " << c.expected;
  ErrorKind kind = ErrorKind::kRuntime;
  const std::string message = error_of([&] { load_config(c.path); }, &kind);
  EXPECT_EQ(message, c.expected);
  EXPECT_EQ(kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(message.find('\n'), std::string::npos) << "messages are one line";
}

TEST_P(BadConfigTest, TextLoaderGivesTheSameMessage) {
  const BadCase& c = GetParam();
  if (!std::filesystem::exists(c.path)) GTEST_SKIP() << "no file: tests the missing-file message";
  std::ifstream in(c.path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(error_of([&] { load_config_text(text.str(), c.path); }), c.expected);
}

std::string case_name(const ::testing::TestParamInfo<BadCase>& info) {
  std::string n = info.param.name.substr(0, info.param.name.rfind('.'));
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Table, BadConfigTest, ::testing::ValuesIn(load_table()), case_name);

TEST(BadConfigTable, EveryBadConfigHasAnExpectedMessage) {
  std::set<std::string> listed;
  for (const BadCase& c : load_table()) listed.insert(c.name);
  EXPECT_GE(listed.size(), 12u);
  for (const auto& entry : std::filesystem::directory_iterator(kBadDir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".yaml") {
      EXPECT_TRUE(listed.count(name)) << name << " is not in expected.txt";
    }
  }
}

TEST(BadConfig, RejectsAFileOverOneMebibyte) {
  test::TempDir dir;
  std::string big = "# " + std::string((1 << 20) + 10, 'x') + "\n";
  const std::string path = dir.write("big.yaml", big);
  EXPECT_EQ(error_of([&] { load_config(path); }),
            "cannot read config '" + path + "': it is larger than 1 MiB; a config is a short YAML file");
  EXPECT_EQ(error_of([&] { load_config_text(big, "big.yaml"); }),
            "big.yaml:1:1: the config is " + std::to_string(big.size()) + " bytes; a config may be at most 1 MiB");
}

TEST(BadConfig, RejectsADirectory) {
  test::TempDir dir;
  const std::string path = dir.file("");
  EXPECT_EQ(error_of([&] { load_config(path); }), "cannot read config '" + path + "': it is a directory");
}

TEST(BadConfig, RejectsAnAliasBomb) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 0; k < 9; ++k) text += ", " + prev;
    text += "]\n";
  }
  const std::string message = error_of([&] { load_config_text(text, "bomb.yaml"); });
  // Refused before yaml-cpp expands anything: configs take no aliases.
  EXPECT_EQ(message.rfind("bomb.yaml:1:5: YAML anchors and aliases", 0), 0u) << message;
}

TEST(BadConfig, RejectsDeepNesting) {
  std::string text = "model: " + std::string(100, '[') + std::string(100, ']') + "\n";
  const std::string message = error_of([&] { load_config_text(text, "deep.yaml"); });
  // Refused before yaml-cpp recurses into it.
  EXPECT_NE(message.find("deep.yaml:1:71: the config nests deeper than 64 levels"), std::string::npos) << message;
}

}  // namespace
}  // namespace devmap
