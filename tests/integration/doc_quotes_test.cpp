// Every message or figure the docs quote from a command is produced by that
// command: README.md and docs/*.md mark each quote with
//   <!-- devmap-quote: coordinator ARGS -->
// right before a fenced block. This test runs `coordinator ARGS` from the
// source folder ({TMP} in ARGS is a fresh temporary folder) and checks that
// every non-empty line of the block is a line of its output (stdout and
// stderr); "..." in a quoted line stands for any text. A change that moves
// a quoted message or figure fails here until the docs are updated.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

namespace fs = std::filesystem;

struct Quote {
  std::string file;
  int line = 0;  // of the marker, 1-based
  std::string args;
  std::vector<std::string> lines;
};

std::string trim_right(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<Quote> find_quotes() {
  std::vector<std::string> files = {std::string(DEVMAP_SOURCE_DIR) + "/README.md"};
  for (const auto& e : fs::directory_iterator(std::string(DEVMAP_SOURCE_DIR) + "/docs"))
    if (e.path().extension() == ".md") files.push_back(e.path().string());
  std::sort(files.begin() + 1, files.end());
  const std::string marker = "<!-- devmap-quote: coordinator ";
  std::vector<Quote> quotes;
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::vector<std::string> text;
    for (std::string l; std::getline(in, l);) text.push_back(l);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i].rfind(marker, 0) != 0) continue;
      Quote q;
      q.file = fs::path(file).filename().string();
      q.line = static_cast<int>(i + 1);
      const size_t end = text[i].find(" -->");
      q.args = text[i].substr(marker.size(), end == std::string::npos ? std::string::npos : end - marker.size());
      size_t j = i + 1;
      if (j < text.size() && text[j].rfind("```", 0) == 0) {
        for (++j; j < text.size() && text[j].rfind("```", 0) != 0; ++j)
          if (!trim_right(text[j]).empty()) q.lines.push_back(trim_right(text[j]));
      }
      quotes.push_back(std::move(q));
    }
  }
  return quotes;
}

// Whether `line` holds the pieces of `quoted` (split at "...") in order, the
// first at its start and the last at its end unless "..." stands there.
bool line_matches(const std::string& line, const std::string& quoted) {
  std::vector<std::string> pieces;
  size_t start = 0;
  for (size_t dots; (dots = quoted.find("...", start)) != std::string::npos; start = dots + 3)
    pieces.push_back(quoted.substr(start, dots - start));
  pieces.push_back(quoted.substr(start));
  if (pieces.size() == 1) return line == quoted;
  if (line.rfind(pieces.front(), 0) != 0) return false;
  size_t pos = pieces.front().size();
  for (size_t k = 1; k + 1 < pieces.size(); ++k) {
    pos = line.find(pieces[k], pos);
    if (pos == std::string::npos) return false;
    pos += pieces[k].size();
  }
  const std::string& last = pieces.back();
  return line.size() >= pos + last.size() && line.compare(line.size() - last.size(), last.size(), last) == 0;
}

std::vector<std::string> split_args(const std::string& args) {
  std::vector<std::string> out;
  std::istringstream in(args);
  for (std::string a; in >> a;) out.push_back(a);
  return out;
}

TEST(DocQuotes, EveryQuotedOutputIsWhatTheCommandPrints) {
  const std::vector<Quote> quotes = find_quotes();
  // The README and docs/CONFIG.md quote at least these many outputs; a
  // marker that stopped being found must not pass silently.
  ASSERT_GE(quotes.size(), 6u);
  for (const Quote& q : quotes) {
    SCOPED_TRACE(q.file + ":" + std::to_string(q.line) + ": coordinator " + q.args);
#ifndef DEVMAP_HAS_ONNX
    // A build without libonnx-dev says so instead of importing or exporting.
    if (q.args.rfind("import ", 0) == 0 || q.args.rfind("export ", 0) == 0) continue;
#endif
    ASSERT_FALSE(q.lines.empty()) << "the marker is not followed by a fenced block with the quoted output";
    TempDir dir;
    std::string cmd = "cd " + shell_quote(DEVMAP_SOURCE_DIR) + " && TMPDIR=" + shell_quote(dir.path()) + " " +
                      shell_quote(DEVMAP_COORDINATOR_BIN);
    for (std::string a : split_args(q.args)) {
      for (size_t p; (p = a.find("{TMP}")) != std::string::npos;) a.replace(p, 5, dir.path());
      cmd += " " + shell_quote(a);
    }
    const std::string out = dir.path() + "/quote-output.txt";
    cmd += " > " + shell_quote(out) + " 2>&1 < /dev/null";
    [[maybe_unused]] int status = std::system(cmd.c_str());
    std::vector<std::string> printed;
    std::istringstream text(read_file(out));
    for (std::string l; std::getline(text, l);) printed.push_back(trim_right(l));
    for (const std::string& quoted : q.lines) {
      bool found = false;
      for (const std::string& l : printed) found = found || line_matches(l, quoted);
      EXPECT_TRUE(found) << "quoted: " << quoted << "\nprinted:\n" << read_file(out);
    }
  }
}

TEST(DocQuotes, LineMatchingTakesDotsForAnyText) {
  EXPECT_TRUE(line_matches("batch 64 needs 52.57 MiB", "batch 64 needs 52.57 MiB"));
  EXPECT_FALSE(line_matches("batch 64 needs 52.58 MiB", "batch 64 needs 52.57 MiB"));
  EXPECT_TRUE(line_matches("cpu:0: 91.99 MiB planned, memory_limit none", "cpu:0: 91.99 MiB planned..."));
  EXPECT_TRUE(line_matches("a b c d", "a...c..."));
  EXPECT_FALSE(line_matches("x a b c", "a...c..."));
  EXPECT_FALSE(line_matches("a b", "a...c"));
}

}  // namespace
}  // namespace devmap::testing
