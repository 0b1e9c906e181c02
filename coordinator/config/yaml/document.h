// Parsing a config's text into one YAML tree, with the checks yaml-cpp does
// not make itself.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "coordinator/config/yaml/source.h"

namespace devmap {

// Parses `text` as a single YAML document. A syntax error becomes
// "file:line:col: YAML syntax error: ..."; text holding several documents is
// an error, and so are anchors and aliases (&name, *name). Text that may
// nest deeper than yaml_limits.h allows is refused before yaml-cpp parses
// it. Text without content (empty, only comments) gives a Null node.
YAML::Node parse_yaml_document(const std::string& text, const YamlSource& src);

// Rejects what yaml-cpp accepts silently: a key given twice in one mapping
// ("duplicate key 'epochs' (already given at line 3)"), non-scalar keys,
// nesting deeper than 32 levels, and trees of more than 100000 nodes once
// aliases are expanded (alias bombs).
void check_yaml_tree(const YAML::Node& root, const YamlSource& src);

}  // namespace devmap
