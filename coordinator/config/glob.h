// Glob patterns over op names, as device_map.place writes them: "fc*",
// "conv?", "relu[12]", "block.[!a]*".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace devmap {

// True when `name` matches `pattern` as a whole:
//   *      any run of characters, including none (dots too: names are flat)
//   ?      exactly one character
//   [abc]  one character of the set; [a-z] a range; [!abc] any other character.
//          A ']' right after '[' or '[!' belongs to the set.
//   other  itself (case-sensitive)
// A '[' without its closing ']' stands for itself (glob_syntax_error rejects
// such patterns before matching).
bool glob_match(std::string_view pattern, std::string_view name);

// True when `pattern` holds any of * ? [, i.e. is more than a plain name.
bool is_glob(std::string_view pattern);

// Why `pattern` is malformed ("'[' at character 3 has no closing ']'"), or
// nullopt when it is well formed.
std::optional<std::string> glob_syntax_error(std::string_view pattern);

}  // namespace devmap
