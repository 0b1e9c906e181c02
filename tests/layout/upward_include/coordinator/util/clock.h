// A file of util/ that uses run/, against the direction of use: the layer
// check (cmake/check_include_layers.cmake) must refuse it, naming line 5.
#pragma once

#include "coordinator/run/session.h"
