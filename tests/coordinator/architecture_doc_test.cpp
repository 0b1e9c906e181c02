// docs/ARCHITECTURE.md opens with the source tree: every folder of core/,
// coordinator/ and kernels/ is listed with its purpose, every folder listed
// exists, and every folder the build's direction-of-use table
// (cmake/include_layers.cmake) names is in the tree, so the picture cannot
// drift from the code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace devmap {
namespace {

namespace fs = std::filesystem;
const std::string kRoot = DEVMAP_SOURCE_DIR;

// The tree block under "## The tree": folder path -> its purpose.
std::map<std::string, std::string> documented_tree() {
  std::ifstream in(kRoot + "/docs/ARCHITECTURE.md");
  std::map<std::string, std::string> tree;
  std::vector<std::string> parents;  // by depth
  bool in_section = false, in_block = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## The tree";
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      if (in_block) break;
      in_block = true;
      continue;
    }
    if (!in_block) continue;
    const size_t indent = line.find_first_not_of(' ');
    const size_t slash = line.find('/', indent);
    if (indent == std::string::npos || slash == std::string::npos || indent % 2 != 0) {
      ADD_FAILURE() << "not a tree line: " << line;
      continue;
    }
    const size_t depth = indent / 2;
    parents.resize(depth);
    std::string path;
    for (const std::string& p : parents) path += p + "/";
    const std::string name = line.substr(indent, slash - indent);
    path += name;
    parents.push_back(name);
    const size_t purpose = line.find_first_not_of(' ', slash + 1);
    tree[path] = purpose == std::string::npos ? "" : line.substr(purpose);
  }
  return tree;
}

bool holds_sources(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh")) return true;
  }
  return false;
}

TEST(ArchitectureDoc, TheTreeListsEveryFolderOfTheProductWithItsPurpose) {
  const auto tree = documented_tree();
  ASSERT_FALSE(tree.empty()) << "docs/ARCHITECTURE.md has no tree under \"## The tree\"";
  for (const std::string top : {"core", "coordinator", "kernels"}) {
    for (const auto& e : fs::recursive_directory_iterator(kRoot + "/" + top)) {
      if (!e.is_directory() || !holds_sources(e.path())) continue;
      const std::string rel = fs::relative(e.path(), kRoot).string();
      EXPECT_TRUE(tree.count(rel)) << rel << "/ holds sources but docs/ARCHITECTURE.md's tree does not list it";
    }
  }
  for (const auto& [path, purpose] : tree) {
    EXPECT_TRUE(fs::is_directory(kRoot + "/" + path)) << "the tree lists " << path << "/, which does not exist";
    EXPECT_FALSE(purpose.empty() && path.find('/') != std::string::npos) << path << "/ is listed without its purpose";
  }
}

TEST(ArchitectureDoc, EveryFolderOfTheDirectionOfUseIsInTheTree) {
  const auto tree = documented_tree();
  std::ifstream in(kRoot + "/cmake/include_layers.cmake");
  const std::regex rule(R"(^\s*"([a-z_/]+):)");
  int rules = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, rule)) continue;
    ++rules;
    EXPECT_TRUE(tree.count(m[1].str())) << "cmake/include_layers.cmake names " << m[1].str()
                                        << ", which docs/ARCHITECTURE.md's tree does not list";
  }
  EXPECT_GT(rules, 10) << "cmake/include_layers.cmake's table was not found";
}

}  // namespace
}  // namespace devmap
