#include "coordinator/config/yaml/document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "coordinator/config/yaml/limits.h"
#include "coordinator/config/yaml/messages.h"
#include "coordinator/config/yaml/scalar.h"

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
    if (depth > kMaxDepth) src_.fail(node, "the config is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (node.IsSequence()) {
      for (const YAML::Node& child : node) visit(child, depth + 1);
    } else if (node.IsMap()) {
      std::map<std::string, YAML::Mark> seen;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) src_.fail(kv.first, "a key must be a name, got " + describe_node(kv.first));
        auto [it, inserted] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
        if (!inserted)
          src_.fail(kv.first, "duplicate key " + quoted(kv.first.Scalar()) + " (already given at line " +
                                  std::to_string(it->second.line + 1) + ")");
        visit(kv.second, depth + 1);
      }
    }
  }

 private:
  const YamlSource& src_;
  int64_t count_ = 0;
};

// Records where each document of a stream starts, and the first anchor or
// alias of the first document; ignores everything else.
struct DocumentEvents : YAML::EventHandler {
  std::vector<YAML::Mark> marks;
  std::optional<YAML::Mark> anchor;  // the first node with an anchor (&name) or alias (*name)

  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t a) override { note(mark, a); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { note(mark, 1); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t a, const std::string&) override {
    note(mark, a);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t a,
                       YAML::EmitterStyle::value) override {
    note(mark, a);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    note(mark, a);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& mark, YAML::anchor_t a) {
    if (a != YAML::NullAnchor && !anchor && marks.size() == 1) anchor = mark;
  }
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
  auto syntax_error = [&](const YAML::ParserException& e) {
    SourceLoc at{src.file(), e.mark.is_null() ? 1 : e.mark.line + 1, e.mark.is_null() ? 1 : e.mark.column + 1};
    if (auto [line, col] = find_indenting_tab(text, at.line); line > 0)
      throw_invalid(SourceLoc{src.file(), line, col}.prefix() +
                    "YAML syntax error: a tab indents this line; YAML indents with spaces only");
    throw_invalid(at.prefix() + "YAML syntax error: " + e.msg);
  };
  check_yaml_nesting(text, src);  // before yaml-cpp recurses into the text
  YAML::Node root;
  DocumentEvents starts;
  try {
    root = YAML::Load(text);  // the first document
    // Not YAML::LoadAll: yaml-cpp 0.7 loops forever (allocating) on some
    // malformed streams such as ",a: 1". Two documents are enough to know.
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    for (int i = 0; i < 2 && parser.HandleNextDocument(starts); ++i) {
    }
  } catch (const YAML::ParserException& e) {
    syntax_error(e);
  }
  if (starts.marks.size() > 1) {
    const YAML::Mark& m = starts.marks[1];
    throw_invalid(SourceLoc{src.file(), m.line + 1, m.column + 1}.prefix() +
                  "YAML syntax error: a second YAML document starts here; a config is one document "
                  "(a '---' line, or a stray character?)");
  }
  if (starts.anchor) {
    const YAML::Mark& m = *starts.anchor;
    throw_invalid(SourceLoc{src.file(), m.line + 1, m.column + 1}.prefix() +
                  "YAML anchors and aliases (&name, *name, <<: *name) are not supported in a config; "
                  "write the value out (see Limits in docs/CONFIG.md)");
  }
  return root;
}

void check_yaml_tree(const YAML::Node& root, const YamlSource& src) {
  TreeChecker(src).visit(root, 0);
}

}  // namespace devmap
