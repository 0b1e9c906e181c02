#include "coordinator/yaml_document.h"

#include <map>
#include <utility>

#include "coordinator/yaml_scalar.h"

namespace devmap {
namespace {

constexpr int kMaxDepth = 32;
constexpr int64_t kMaxNodes = 100000;

class TreeChecker {
 public:
  explicit TreeChecker(const YamlSource& src) : src_(src) {}

  void visit(const YAML::Node& node, int depth) {
    if (++count_ > kMaxNodes)
      src_.fail(node, "the config expands to more than " + std::to_string(kMaxNodes) +
                          " YAML nodes (aliases that repeat too much?)");
    if (depth > kMaxDepth)
      src_.fail(node, "the config is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (node.IsSequence()) {
      for (const YAML::Node& child : node) visit(child, depth + 1);
    } else if (node.IsMap()) {
      std::map<std::string, YAML::Mark> seen;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar())
          src_.fail(kv.first, "a key must be a name, got " + describe_node(kv.first));
        auto [it, inserted] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
        if (!inserted)
          src_.fail(kv.first, "duplicate key '" + kv.first.Scalar() + "' (already given at line " +
                                  std::to_string(it->second.line + 1) + ")");
        visit(kv.second, depth + 1);
      }
    }
  }

 private:
  const YamlSource& src_;
  int64_t count_ = 0;
};

// The first line up to `last_line` (1-based) whose indentation holds a tab,
// as (line, column) of the tab; (0, 0) if none. yaml-cpp reports such lines
// with a puzzling message, so the loader names the tab instead.
std::pair<int, int> find_indenting_tab(const std::string& text, int last_line) {
  int line = 1;
  size_t start = 0;
  while (start <= text.size() && line <= last_line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    size_t i = start;
    int tab_col = 0;
    for (; i < end && (text[i] == ' ' || text[i] == '\t'); ++i)
      if (text[i] == '\t' && tab_col == 0) tab_col = static_cast<int>(i - start) + 1;
    if (tab_col > 0 && i < end && text[i] != '#') return {line, tab_col};
    start = end + 1;
    ++line;
  }
  return {0, 0};
}

}  // namespace

YAML::Node parse_yaml_document(const std::string& text, const YamlSource& src) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::ParserException& e) {
    SourceLoc at{src.file(), e.mark.is_null() ? 1 : e.mark.line + 1, e.mark.is_null() ? 1 : e.mark.column + 1};
    if (auto [line, col] = find_indenting_tab(text, at.line); line > 0)
      throw_invalid(SourceLoc{src.file(), line, col}.prefix() +
                    "YAML syntax error: a tab indents this line; YAML indents with spaces only");
    throw_invalid(at.prefix() + "YAML syntax error: " + e.msg);
  }
  if (docs.size() > 1)
    throw_invalid(src.start_prefix() + "the file holds " + std::to_string(docs.size()) +
                  " YAML documents (separated by '---'); a config is one document");
  return docs.empty() ? YAML::Node(YAML::NodeType::Null) : docs[0];
}

void check_yaml_tree(const YAML::Node& root, const YamlSource& src) { TreeChecker(src).visit(root, 0); }

}  // namespace devmap
