#include "coordinator/config/yaml/limits.h"

#include <vector>

namespace devmap {
namespace {

bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

class NestingScan {
 public:
  NestingScan(const std::string& text, const YamlSource& src) : text_(text), src_(src) {}

  void run() {
    size_t start = 0;
    for (int line = 1; start < text_.size(); ++line) {
      size_t end = text_.find('\n', start);
      if (end == std::string::npos) end = text_.size();
      scan_line(start, end, line);
      start = end + 1;
    }
  }

 private:
  void scan_line(size_t begin, size_t end, int line) {
    size_t i = begin;
    if (!quote_) {
      while (i < end && text_[i] == ' ') ++i;
      const int indent = static_cast<int>(i - begin);
      const bool empty = i == end || text_[i] == '#' || text_[i] == '\r';
      if (block_scalar_indent_ >= 0) {
        if (empty || indent > block_scalar_indent_) return;  // the block scalar's text
        block_scalar_indent_ = -1;
      }
      if (empty) return;
      if (flow_ == 0) {
        while (!levels_.empty() && levels_.back() > indent) levels_.pop_back();
        if (levels_.empty() || levels_.back() < indent) open_level(indent, line, indent);
      }
      node_start_ = true;
      line_indent_ = indent;
    }
    for (; i < end; ++i) {
      const char c = text_[i];
      const int col = static_cast<int>(i - begin);
      if (quote_) {
        if (quote_ == '"' && c == '\\') {
          ++i;  // the escaped character, never a closing quote
        } else if (c == quote_) {
          if (quote_ == '\'' && i + 1 < end && text_[i + 1] == '\'') {
            ++i;  // '' inside single quotes
          } else {
            quote_ = 0;
          }
        }
        continue;
      }
      const bool after_blank = i == begin || blank(text_[i - 1]);
      const bool before_blank = i + 1 >= end || blank(text_[i + 1]);
      if (c == '#' && after_blank) return;  // a comment
      if (blank(c)) continue;
      if (node_start_ && (c == '\'' || c == '"')) {
        quote_ = c;
        node_start_ = false;
      } else if (c == '[' || c == '{') {
        const bool opens = flow_ > 0 || node_start_;  // else a character of a plain scalar
        if (opens) {
          ++flow_;
          check(line, col);
        }
        node_start_ = opens;
      } else if ((c == ']' || c == '}') && flow_ > 0) {
        --flow_;
        node_start_ = false;
      } else if (c == ',' && flow_ > 0) {
        node_start_ = true;
      } else if (c == ':' && (before_blank || flow_ > 0)) {
        node_start_ = true;
      } else if ((c == '-' || c == '?') && node_start_ && before_blank && flow_ == 0) {
        open_level(col + 1, line, col);  // compact nesting: "- - x", "- key: x"
      } else if ((c == '|' || c == '>') && node_start_ && flow_ == 0) {
        block_scalar_indent_ = line_indent_;
        return;
      } else if ((c == '&' || c == '!') && node_start_) {
        while (i + 1 < end && !blank(text_[i + 1])) ++i;  // an anchor or tag: the node follows
      } else {
        node_start_ = false;
      }
    }
  }

  void open_level(int column, int line, int col) {
    levels_.push_back(column);
    check(line, col);
  }

  void check(int line, int col) const {
    if (flow_ + static_cast<int>(levels_.size()) <= kMaxYamlNesting) return;
    throw_invalid(SourceLoc{src_.file(), line, col + 1}.prefix() + "the config nests deeper than " +
                  std::to_string(kMaxYamlNesting) +
                  " levels of brackets and indentation here; a config needs far fewer (see Limits in docs/CONFIG.md)");
  }

  const std::string& text_;
  const YamlSource& src_;
  std::vector<int> levels_;  // columns of the open indentation levels, increasing
  int flow_ = 0;             // open '[' and '{'
  char quote_ = 0;           // inside a quoted scalar: its quote character
  bool node_start_ = true;   // the next character may begin a node
  int line_indent_ = 0;
  int block_scalar_indent_ = -1;  // inside a block scalar: the indentation of its parent line
};

}  // namespace

void check_yaml_nesting(const std::string& text, const YamlSource& src) {
  NestingScan(text, src).run();
}

}  // namespace devmap
