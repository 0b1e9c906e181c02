#include "coordinator/data/idx_reader.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>

#include "coordinator/data/sample_file.h"
#include "core/base/error.h"

namespace devmap {
namespace {

constexpr uint32_t kImageMagic = 0x00000803;
constexpr uint32_t kLabelMagic = 0x00000801;
constexpr int64_t kMaxImageBytes = int64_t{1} << 24;  // one image at most 16 MiB
constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();

std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xf];
  return s;
}

// A gzip or plain file read through zlib (gzread passes plain files through).
class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      std::string msg = "cannot open '" + path + "': " + std::strerror(err);
      if (err == ENOENT && path.rfind("/usr/share/datasets/", 0) == 0)
        msg += " (Fashion-MNIST comes from Debian's package dataset-fashion-mnist: run scripts/setup.sh)";
      throw_invalid(msg);
    }
    file_ = gzdopen(fd, "rb");
    if (!file_) {
      ::close(fd);
      throw_runtime("cannot open '" + path + "': out of memory for the zlib reader");
    }
  }
  ~IdxFile() { gzclose(file_); }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  [[noreturn]] void fail(const std::string& message) const { throw_invalid("'" + path_ + "' " + message); }

  // Reads up to `n` bytes; returns how many it got (fewer only at the end).
  size_t read(uint8_t* out, size_t n) {
    size_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, size_t{1} << 26));
      const int got = gzread(file_, out + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* what = gzerror(file_, &code);
        if (code == Z_ERRNO) throw_runtime("cannot read '" + path_ + "': " + std::strerror(errno));
        if (code == Z_BUF_ERROR) fail("is truncated: its gzip stream ends early");
        fail(std::string("is not valid gzip data: ") + what);
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

  uint32_t read_u32(const char* what) {
    uint8_t b[4];
    if (read(b, 4) != 4) fail(std::string("is truncated: it ends inside the header (") + what + ")");
    return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | uint32_t{b[3]};
  }

  void expect_magic(uint32_t want, const char* kind) {
    const uint32_t magic = read_u32("magic number");
    if (magic == want) return;
    std::string seen = magic == kImageMagic ? " (an image file)" : magic == kLabelMagic ? " (a label file)" : "";
    fail("is not an IDX " + std::string(kind) + " file: its magic number is " + hex32(magic) + seen + ", expected " +
         hex32(want));
  }

  // Reads exactly `n` bytes of payload, failing with `what` (e.g. "10000
  // labels") if the file ends first. Grows the buffer as data arrives, so a
  // lying header cannot make us allocate more than the file holds.
  std::vector<uint8_t> read_payload(int64_t n, const std::string& what) {
    std::vector<uint8_t> out;
    const size_t total = static_cast<size_t>(n);
    while (out.size() < total) {
      const size_t before = out.size();
      out.resize(std::min(total, before + (size_t{1} << 24)));
      const size_t got = read(out.data() + before, out.size() - before);
      if (before + got < out.size())
        fail("is truncated: the header announces " + what + " (" + std::to_string(total) +
             " bytes after the header) but only " + std::to_string(before + got) + " bytes follow");
    }
    return out;
  }

  // When the whole file was meant to be read: nothing may follow.
  void expect_end(const std::string& what) {
    uint8_t extra[4096];
    size_t n = read(extra, sizeof extra);
    if (n == 0) return;
    size_t total = n;
    while ((n = read(extra, sizeof extra)) > 0) total += n;
    fail("holds " + std::to_string(total) + " bytes more than the header announces (" + what +
         "): the count in its header is wrong");
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

int64_t checked_count(IdxFile& file, uint32_t raw, const char* what) {
  if (raw > static_cast<uint32_t>(kMaxCount))
    file.fail("has an implausible " + std::string(what) + " of " + std::to_string(raw) + " in its header");
  return static_cast<int64_t>(raw);
}

int64_t apply_limit(int64_t count, int64_t limit) {
  if (limit < 0) throw_invalid("a sample limit must be >= 0, got " + std::to_string(limit));
  return limit > 0 && limit < count ? limit : count;
}

}  // namespace

namespace {

// An image file's header and its first `limit` images (0: all), handed to
// `take` a chunk at a time, so that a lying header cannot make anyone hold
// more than the file has; the checks and errors of load_idx_images.
ImageSet read_idx_images(const std::string& path, int64_t limit,
                         const std::function<void(const uint8_t*, size_t)>& take) {
  IdxFile file(path);
  file.expect_magic(kImageMagic, "image");
  ImageSet set;
  const int64_t count = checked_count(file, file.read_u32("image count"), "image count");
  set.rows = checked_count(file, file.read_u32("rows"), "row count");
  set.cols = checked_count(file, file.read_u32("columns"), "column count");
  if (set.rows == 0 || set.cols == 0 || set.rows * set.cols > kMaxImageBytes)
    file.fail("has an implausible image size " + std::to_string(set.rows) + "x" + std::to_string(set.cols) +
              " in its header");
  set.count = apply_limit(count, limit);
  const std::string what =
      std::to_string(count) + " images of " + std::to_string(set.rows) + "x" + std::to_string(set.cols);
  const size_t total = static_cast<size_t>(set.count * set.rows * set.cols);
  std::vector<uint8_t> chunk(std::min(total, size_t{1} << 20));
  for (size_t done = 0; done < total;) {
    const size_t want = std::min(chunk.size(), total - done);
    const size_t got = file.read(chunk.data(), want);
    if (got < want)
      file.fail("is truncated: the header announces " + what + " (" + std::to_string(total) +
                " bytes after the header) but only " + std::to_string(done + got) + " bytes follow");
    take(chunk.data(), got);
    done += got;
  }
  if (set.count == count) file.expect_end(what);
  return set;
}

}  // namespace

ImageSet load_idx_images(const std::string& path, int64_t limit) {
  std::vector<uint8_t> bytes;
  ImageSet set = read_idx_images(path, limit, [&](const uint8_t* p, size_t n) { bytes.insert(bytes.end(), p, p + n); });
  set.bytes = std::move(bytes);
  return set;
}

ImageSet copy_idx_images(const std::string& path, int64_t limit, int out) {
  return read_idx_images(path, limit, [&](const uint8_t* p, size_t n) { write_all(out, p, n, "'" + path + "'"); });
}

std::vector<uint8_t> load_idx_labels(const std::string& path, int64_t limit) {
  IdxFile file(path);
  file.expect_magic(kLabelMagic, "label");
  const int64_t count = checked_count(file, file.read_u32("label count"), "label count");
  const int64_t n = apply_limit(count, limit);
  const std::string what = std::to_string(count) + " labels";
  std::vector<uint8_t> labels = file.read_payload(n, what);
  if (n == count) file.expect_end(what);
  return labels;
}

struct IdxImageReader::File {
  explicit File(const std::string& path) : idx(path) {}
  IdxFile idx;
  std::string what;  // "N images of RxC", for messages
};

IdxImageReader::IdxImageReader(const std::string& path) : file_(std::make_unique<File>(path)) {
  IdxFile& file = file_->idx;
  file.expect_magic(kImageMagic, "image");
  count_ = checked_count(file, file.read_u32("image count"), "image count");
  rows_ = checked_count(file, file.read_u32("rows"), "row count");
  cols_ = checked_count(file, file.read_u32("columns"), "column count");
  if (rows_ == 0 || cols_ == 0 || rows_ * cols_ > kMaxImageBytes)
    file.fail("has an implausible image size " + std::to_string(rows_) + "x" + std::to_string(cols_) +
              " in its header");
  file_->what = std::to_string(count_) + " images of " + std::to_string(rows_) + "x" + std::to_string(cols_);
}

IdxImageReader::~IdxImageReader() = default;

void IdxImageReader::read(int64_t n, float* out) {
  if (n < 0 || next_ + n > count_)
    throw_runtime("read past the " + std::to_string(count_) + " images of the file");  // a caller's bug
  const size_t bytes = static_cast<size_t>(n * rows_ * cols_);
  bytes_.resize(bytes);
  const size_t got = file_->idx.read(bytes_.data(), bytes);
  if (got != bytes)
    file_->idx.fail("is truncated: the header announces " + file_->what + " but the file ends after " +
                    std::to_string(next_ + static_cast<int64_t>(got / static_cast<size_t>(rows_ * cols_))) +
                    " whole images");
  for (size_t i = 0; i < bytes; ++i) out[i] = pixel_value(bytes_[i]);
  next_ += n;
  if (next_ == count_) file_->idx.expect_end(file_->what);
}

LabeledImages load_idx_dataset(const std::string& images_path, const std::string& labels_path, int64_t limit) {
  LabeledImages out{load_idx_images(images_path, limit), load_idx_labels(labels_path, limit)};
  if (out.images.count != static_cast<int64_t>(out.labels.size()))
    throw_invalid("'" + images_path + "' holds " + std::to_string(out.images.count) + " images but '" + labels_path +
                  "' holds " + std::to_string(out.labels.size()) + " labels: they must come in pairs");
  return out;
}

}  // namespace devmap
