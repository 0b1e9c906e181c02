#include "coordinator/config/yaml/source.h"

#include "coordinator/config/yaml/messages.h"

namespace devmap {
namespace {

// True when `node` is `root` or lies under it. Override values are small.
bool contains(const YAML::Node& root, const YAML::Node& node, int depth) {
  if (root.is(node)) return true;
  if (depth > 64) return false;
  if (root.IsSequence()) {
    for (const YAML::Node& child : root)
      if (contains(child, node, depth + 1)) return true;
  } else if (root.IsMap()) {
    for (const auto& kv : root)
      if (contains(kv.first, node, depth + 1) || contains(kv.second, node, depth + 1)) return true;
  }
  return false;
}

}  // namespace

void YamlSource::add_override(const YAML::Node& node, std::string text) {
  overrides_.emplace_back(node, std::move(text));
}

const std::string* YamlSource::override_of(const YAML::Node& node) const {
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it)
    if (contains(it->first, node, 0)) return &it->second;
  return nullptr;
}

std::string YamlSource::prefix(const YAML::Node& node) const {
  if (const std::string* text = override_of(node)) return "--set " + one_line(*text) + ": ";
  return loc(node).prefix();
}

SourceLoc YamlSource::loc(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  SourceLoc out{file_, 1, 1};
  if (const std::string* text = override_of(node)) out.file = "--set " + one_line(*text);
  if (!mark.is_null()) {
    out.line = mark.line + 1;
    out.col = mark.column + 1;
  }
  return out;
}

void YamlSource::fail(const YAML::Node& node, const std::string& message) const {
  throw_invalid(prefix(node) + one_line(message, message.size()));  // one line, whatever the user wrote
}

}  // namespace devmap
