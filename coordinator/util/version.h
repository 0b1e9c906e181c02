// The version of devmap this coordinator was built as.
#pragma once

namespace devmap {

// The project's version from CMake ("0.9.0"), or "dev" in a build that did
// not set it.
const char* devmap_version();

}  // namespace devmap
