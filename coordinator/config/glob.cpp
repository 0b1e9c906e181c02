#include "coordinator/config/glob.h"

namespace devmap {
namespace {

constexpr size_t kNone = std::string_view::npos;

// Index just past the set that opens at pattern[open] == '[', or kNone when
// it has no closing ']'.
size_t set_end(std::string_view pattern, size_t open) {
  size_t i = open + 1;
  if (i < pattern.size() && pattern[i] == '!') ++i;
  if (i < pattern.size() && pattern[i] == ']') ++i;  // a leading ']' is a member
  while (i < pattern.size() && pattern[i] != ']') ++i;
  return i < pattern.size() ? i + 1 : kNone;
}

// Whether `c` is in the set whose text between the brackets is `body`.
bool set_contains(std::string_view body, char c) {
  const bool negate = !body.empty() && body[0] == '!';
  bool found = false;
  for (size_t i = negate ? 1 : 0; i < body.size(); ++i) {
    if (i + 2 < body.size() && body[i + 1] == '-') {
      found = found || (body[i] <= c && c <= body[i + 2]);
      i += 2;
    } else {
      found = found || body[i] == c;
    }
  }
  return found != negate;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view name) {
  // Greedy scan; on a mismatch, let the last '*' swallow one more character.
  // Linear in practice, O(|pattern| * |name|) at worst.
  size_t p = 0, n = 0;
  size_t star = kNone, star_n = 0;  // the last '*' seen and where its run ends
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
      continue;
    }
    if (p < pattern.size()) {
      const char c = pattern[p];
      const size_t end = c == '[' ? set_end(pattern, p) : kNone;
      if (end != kNone) {
        if (set_contains(pattern.substr(p + 1, end - p - 2), name[n])) {
          p = end;
          ++n;
          continue;
        }
      } else if (c == '?' || c == name[n]) {
        ++p;
        ++n;
        continue;
      }
    }
    if (star == kNone) return false;
    p = star + 1;
    n = ++star_n;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool is_glob(std::string_view pattern) {
  return pattern.find_first_of("*?[") != kNone;
}

std::optional<std::string> glob_syntax_error(std::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '[') continue;
    const size_t end = set_end(pattern, i);
    if (end == kNone) return "'[' at character " + std::to_string(i + 1) + " has no closing ']'";
    i = end - 1;
  }
  return std::nullopt;
}

}  // namespace devmap
