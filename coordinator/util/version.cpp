#include "coordinator/util/version.h"

#ifndef DEVMAP_VERSION
#define DEVMAP_VERSION "dev"
#endif

namespace devmap {

const char* devmap_version() {
  return DEVMAP_VERSION;
}

}  // namespace devmap
