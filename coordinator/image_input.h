// The images a predict job runs on: an IDX image file (gzip or plain, like
// the data sets) or a CSV of pixel rows (0-255, one image per row, with or
// without a header line, as Kaggle's digit-recognizer test.csv).
#pragma once

#include <string>

#include "coordinator/dataset.h"

namespace devmap {

// Loads `path` (".csv" by its extension, IDX otherwise) as a Dataset whose
// samples must have `expected` per-sample shape; labels are all 0.
Dataset load_prediction_input(const std::string& path, const Shape& expected);

}  // namespace devmap
