#include "coordinator/data/image_input.h"

#include <cerrno>
#include <charconv>
#include <cstring>

#include "coordinator/data/npy.h"
#include "core/base/error.h"

namespace devmap {
namespace {

// By content, whatever the name: IDX files start with two zero bytes, gzip
// files with 1f 8b; anything else is read as CSV text.
bool is_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid("cannot open input '" + path + "': " + std::strerror(errno));
  unsigned char head[2] = {0, 0};
  in.read(reinterpret_cast<char*>(head), 2);
  if (in.gcount() < 2) return true;
  const bool idx = head[0] == 0 && head[1] == 0;
  const bool gzip = head[0] == 0x1f && head[1] == 0x8b;
  return !idx && !gzip;
}

// Reads CSV line `line_no` (`line` without its end) into `out` (null: only
// checks it). Returns false for a line that holds no image (blank, header).
bool parse_csv_row(const std::string& path, int64_t line_no, std::string& line, int64_t width, const Shape& expected,
                   float* out) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
  if (line.empty()) return false;
  if (line_no == 1 && !std::isdigit(static_cast<unsigned char>(line[0]))) return false;  // a header
  int64_t col = 0;
  const char* p = line.data();
  const char* end = p + line.size();
  while (p <= end) {
    const char* comma = static_cast<const char*>(std::memchr(p, ',', static_cast<size_t>(end - p)));
    const char* stop = comma ? comma : end;
    int value = -1;
    auto [q, ec] = std::from_chars(p, stop, value);
    if (ec != std::errc() || q != stop || value < 0 || value > 255)
      throw_invalid(path + ":" + std::to_string(line_no) + ": column " + std::to_string(col + 1) +
                    " is not a pixel value 0-255: '" + std::string(p, stop) + "'");
    if (out && col < width) out[col] = pixel_value(static_cast<uint8_t>(value));
    ++col;
    if (!comma) break;
    p = comma + 1;
  }
  if (col != width)
    throw_invalid(path + ":" + std::to_string(line_no) + ": " + std::to_string(col) + " pixels, the model's input " +
                  expected.to_string() + " needs " + std::to_string(width));
  return true;
}

std::unique_ptr<std::ifstream> open_csv(const std::string& path) {
  auto in = std::make_unique<std::ifstream>(path);
  if (!*in) throw_invalid("cannot open input '" + path + "': " + std::strerror(errno));
  return in;
}

}  // namespace

PredictionInput::PredictionInput(const std::string& path, const Shape& expected)
    : path_(path), width_(expected.numel()) {
  if (is_numpy_path(path)) {
    numpy_ = std::make_unique<Dataset>(load_numpy_images(path, expected));
    count_ = numpy_->count;
    if (count_ == 0) throw_invalid(path + ": no images");
    return;
  }
  if (is_csv(path)) {
    // First pass: count and check every row, holding one line at a time.
    std::unique_ptr<std::ifstream> in = open_csv(path);
    std::string line;
    for (int64_t line_no = 1; std::getline(*in, line); ++line_no)
      if (parse_csv_row(path, line_no, line, width_, expected, nullptr)) ++count_;
    if (count_ == 0) throw_invalid(path + ": no images");
    csv_ = open_csv(path);
    return;
  }
  idx_ = std::make_unique<IdxImageReader>(path);
  const Shape shape{1, idx_->rows(), idx_->cols()};
  if (shape != expected)
    throw_invalid(path + ": images are " + shape.to_string() + " per sample, but the model's input op expects " +
                  expected.to_string());
  count_ = idx_->count();
  if (count_ == 0) throw_invalid(path + ": no images");
}

PredictionInput::~PredictionInput() = default;

void PredictionInput::fill(int64_t first, int64_t n, float* images, float* labels) {
  if (first != next_ || first + n > count_)
    throw_runtime("images " + std::to_string(first) + ".." + std::to_string(first + n) + " of " + path_ +
                  " asked for out of order");  // a caller's bug
  std::memset(labels, 0, static_cast<size_t>(n) * sizeof(float));
  if (numpy_) {
    for (int64_t k = 0; k < n; ++k) sample_pixels(*numpy_, first + k, images + k * width_);
  } else if (idx_) {
    idx_->read(n, images);
  } else {
    std::string line;
    for (int64_t k = 0; k < n;) {
      if (!std::getline(*csv_, line)) throw_invalid(path_ + " changed while it was read: it holds fewer images now");
      ++csv_line_;
      if (parse_csv_row(path_, csv_line_, line, width_, Shape{width_}, images + k * width_)) ++k;
    }
  }
  next_ += n;
}

uint64_t PredictionInput::buffer_bytes(const Shape& sample, int64_t batch) {
  return static_cast<uint64_t>(sample.numel() * batch);  // one batch of bytes (IDX) or less (a CSV line)
}

}  // namespace devmap
