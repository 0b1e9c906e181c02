// run/ may use util/: the layer check accepts this include.
#pragma once

#include "coordinator/util/clock.h"
