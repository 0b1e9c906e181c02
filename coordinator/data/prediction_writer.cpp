#include "coordinator/data/prediction_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace devmap {

void softmax(const float* logits, int64_t n, double* out) {
  const double max = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += out[i] = std::exp(static_cast<double>(logits[i]) - max);
  for (int64_t i = 0; i < n; ++i) out[i] /= sum;
}

PredictionWriter::PredictionWriter(std::ostream& out, int64_t classes, bool given)
    : out_(out), classes_(classes), given_(given), probs_(static_cast<size_t>(classes)) {}

void PredictionWriter::write_header() {
  out_ << "ImageId,Label";
  for (int64_t c = 0; c < classes_; ++c) out_ << ",p" << c;
  out_ << "\n";
}

void PredictionWriter::write_rows(int64_t n, const float* labels, const float* logits) {
  char cell[32];
  for (int64_t k = 0; k < n; ++k) {
    int len =
        std::snprintf(cell, sizeof cell, "%lld,%d", static_cast<long long>(rows_ + 1), static_cast<int>(labels[k]));
    line_.assign(cell, static_cast<size_t>(len));
    if (classes_ > 0) {
      if (given_)
        std::copy(logits + k * classes_, logits + (k + 1) * classes_, probs_.begin());
      else
        softmax(logits + k * classes_, classes_, probs_.data());
      for (double p : probs_) {
        len = std::snprintf(cell, sizeof cell, ",%.6g", p);
        line_.append(cell, static_cast<size_t>(len));
      }
    }
    line_ += '\n';
    out_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
    ++rows_;
  }
}

}  // namespace devmap
