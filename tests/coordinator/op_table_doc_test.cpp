// docs/CONFIG.md's op table (the rows under "### Ops") lists exactly the
// registry's ops, and each row names every attribute of its op's schema,
// so an op cannot be registered without being documented (or documented
// without being registered).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/graph/op_schema.h"

namespace devmap {
namespace {

// op name -> its row, in document order.
std::map<std::string, std::string> op_table_rows() {
  std::ifstream in(std::string(DEVMAP_SOURCE_DIR) + "/docs/CONFIG.md");
  std::map<std::string, std::string> rows;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      in_section = line == "### Ops";
      continue;
    }
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const size_t end = line.find('`', 3);
    if (end == std::string::npos) continue;
    rows[line.substr(3, end - 3)] = line;
  }
  return rows;
}

TEST(OpTableDoc, ListsExactlyTheRegisteredOps) {
  const std::map<std::string, std::string> rows = op_table_rows();
  std::vector<std::string> documented;
  for (const auto& [op, row] : rows) documented.push_back(op);
  EXPECT_EQ(documented, known_op_names()) << "docs/CONFIG.md's op table (### Ops) and the op registry differ";
}

TEST(OpTableDoc, EachRowNamesItsOpsAttributes) {
  const std::map<std::string, std::string> rows = op_table_rows();
  for (const std::string& op : known_op_names()) {
    auto row = rows.find(op);
    if (row == rows.end()) continue;  // the test above reports it
    for (const AttrSpec& attr : find_op(op)->attrs)
      EXPECT_NE(row->second.find("`" + attr.name + "`"), std::string::npos)
          << "docs/CONFIG.md's row for " << op << " does not name its attribute " << attr.name;
  }
}

}  // namespace
}  // namespace devmap
