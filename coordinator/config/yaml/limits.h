// Bounds on a config's text, checked before yaml-cpp sees it. Debian's
// yaml-cpp recurses once per nesting level and is not built with the
// sanitizers, so devmap refuses deep input itself rather than trusting the
// parser's own guard. See "Limits" in docs/CONFIG.md.
#pragma once

#include <string>

#include "coordinator/config/yaml/source.h"

namespace devmap {

// The most nesting the lexical scan below admits. The tree check after
// parsing (yaml_document.h) allows 32 real levels; this bound is looser
// because it over-estimates.
constexpr int kMaxYamlNesting = 64;

// Throws devmap::Error (kInvalidInput) "file:line:col: ..." when the text
// may nest deeper than kMaxYamlNesting: the estimate at a point is the
// number of open '[' and '{' plus the number of indentation levels (a
// `- ` or `? ` indicator opens one, too). It skips comments, quoted scalars
// and block scalars (| and >). For well-formed YAML it over-estimates what
// yaml-cpp builds (odd plain scalars such as `a: x[` count as nesting);
// input crafted to mislead the scan still meets yaml-cpp's own recursion
// guard. Linear in the text's size; allocates only the indentation stack.
void check_yaml_nesting(const std::string& text, const YamlSource& src);

}  // namespace devmap
