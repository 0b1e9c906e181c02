// PredictionWriter: the predictions CSV, written a batch at a time as the
// outputs arrive, so no process holds the whole output: "ImageId,Label"
// rows with 1-based ids or, with probabilities, "ImageId,Label,p0,...,pK-1"
// where p0..pK-1 are the softmax of the row's K logits (or the K values
// themselves when the model's own softmax made them), each printed with 6
// significant digits (%.6g).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace devmap {

// The softmax of `n` logits into `out`, in double: exp(x - max) / sum.
void softmax(const float* logits, int64_t n, double* out);

class PredictionWriter {
 public:
  // classes > 0: write probabilities over that many classes; 0: labels
  // only. given: the rows' values are probabilities already (the argmax's
  // input is a softmax op), written as they are.
  PredictionWriter(std::ostream& out, int64_t classes, bool given = false);

  void write_header();
  // Writes `n` rows: labels[k] is row k's class (as the argmax op writes
  // it, a float); with probabilities, logits + k * classes are its logits.
  void write_rows(int64_t n, const float* labels, const float* logits);
  int64_t rows() const { return rows_; }

 private:
  std::ostream& out_;
  int64_t classes_;
  bool given_;
  int64_t rows_ = 0;
  std::vector<double> probs_;
  std::string line_;
};

}  // namespace devmap
