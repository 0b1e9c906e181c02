#include "coordinator/image_input.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "coordinator/idx_reader.h"
#include "core/error.h"

namespace devmap {
namespace {

Dataset load_csv(const std::string& path, const Shape& expected) {
  std::ifstream in(path);
  if (!in) throw_invalid("cannot open input '" + path + "': " + std::strerror(errno));
  Dataset d;
  d.name = path;
  d.sample_shape = expected;
  const int64_t width = expected.numel();
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line_no == 1 && !std::isdigit(static_cast<unsigned char>(line[0]))) continue;  // a header
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
      d.pixels.push_back(static_cast<float>(value) / 255.0f);
      ++col;
      if (!comma) break;
      p = comma + 1;
    }
    if (col != width)
      throw_invalid(path + ":" + std::to_string(line_no) + ": " + std::to_string(col) + " pixels, the model's input " +
                    expected.to_string() + " needs " + std::to_string(width));
    ++d.count;
  }
  if (d.count == 0) throw_invalid(path + ": no images");
  d.labels.assign(static_cast<size_t>(d.count), 0);
  return d;
}

}  // namespace

Dataset load_prediction_input(const std::string& path, const Shape& expected) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0) return load_csv(path, expected);
  ImageSet img = load_idx_images(path, 0);
  Dataset d;
  d.name = path;
  d.count = img.count;
  d.sample_shape = Shape{1, img.rows, img.cols};
  if (d.sample_shape != expected)
    throw_invalid(path + ": images are " + d.sample_shape.to_string() +
                  " per sample, but the model's input op expects " + expected.to_string());
  d.pixels = std::move(img.pixels);
  d.labels.assign(static_cast<size_t>(d.count), 0);
  return d;
}

}  // namespace devmap
