#include "coordinator/config/yaml/messages.h"

#include <algorithm>
#include <vector>

namespace devmap {

std::string one_line(std::string_view text, size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max) return out + "...";
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += std::string("\\x") + hex[c >> 4] + hex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string quoted(std::string_view text) {
  return "'" + one_line(text, 60) + "'";
}

int edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment distance, O(|a| * |b|): names are short.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::optional<std::string> nearest_name(const std::string& typed, const std::vector<std::string>& valid) {
  const int limit = std::min(2, std::max(1, static_cast<int>(typed.size()) / 3));
  std::optional<std::string> best;
  int best_distance = limit + 1;
  for (const std::string& name : valid) {
    int dist = edit_distance(typed, name);
    if (dist < best_distance) {
      best_distance = dist;
      best = name;
    }
  }
  return best;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string unknown_key_message(const std::string& key, const std::string& where,
                                const std::vector<std::string>& valid) {
  std::string msg = "unknown key " + quoted(key) + " " + where;
  if (auto near = nearest_name(key, valid)) return msg + " (did you mean '" + *near + "'?)";
  return msg + " (valid: " + join_names(valid) + ")";
}

}  // namespace devmap
