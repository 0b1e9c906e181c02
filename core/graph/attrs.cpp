#include "core/graph/attrs.h"

#include <cassert>

namespace devmap {

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kInt: return "integer";
    case AttrType::kFloat: return "number";
    case AttrType::kString: return "string";
    case AttrType::kIntList: return "list of integers";
    case AttrType::kBool: return "boolean";
  }
  return "?";
}

const AttrValue& Attrs::at(const std::string& key) const {
  auto it = values_.find(key);
  assert(it != values_.end() && "attribute missing: schemas give defaults for every attr");
  return it->second;
}

}  // namespace devmap
