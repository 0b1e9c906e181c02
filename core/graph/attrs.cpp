#include "core/graph/attrs.h"

#include <cassert>

namespace devmap {

const AttrValue& Attrs::at(const std::string& key) const {
  auto it = values_.find(key);
  assert(it != values_.end() && "attribute missing: schemas give defaults for every attr");
  return it->second;
}

}  // namespace devmap
