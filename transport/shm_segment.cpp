#include "transport/shm_segment.h"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cstring>

#include "core/base/error.h"
#include "core/base/format_bytes.h"

namespace bip = boost::interprocess;

namespace devmap {

struct ShmSegment::Impl {
  bip::shared_memory_object object;
  bip::mapped_region region;
};

ShmSegment::ShmSegment(std::string name, bool owner, std::unique_ptr<Impl> impl)
    : name_(std::move(name)), owner_(owner), impl_(std::move(impl)) {}

ShmSegment::ShmSegment(ShmSegment&& o) noexcept
    : name_(std::move(o.name_)), owner_(o.owner_), impl_(std::move(o.impl_)) {
  o.owner_ = false;
}

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    if (owner_ && impl_) remove(name_);
    name_ = std::move(o.name_);
    owner_ = o.owner_;
    impl_ = std::move(o.impl_);
    o.owner_ = false;
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  impl_.reset();  // unmap first
  if (owner_) remove(name_);
}

ShmSegment ShmSegment::create(const std::string& name, size_t bytes) {
  auto impl = std::make_unique<Impl>();
  try {
    bip::permissions perms(0600);
    impl->object = bip::shared_memory_object(bip::create_only, name.c_str(), bip::read_write, perms);
  } catch (const bip::interprocess_exception& e) {
    throw_runtime("cannot create shared-memory segment '/dev/shm/" + name + "': " + e.what());
  }
  ShmSegment seg(name, true, nullptr);  // owns the name from here: removed if mapping fails
  try {
    impl->object.truncate(static_cast<bip::offset_t>(bytes));
    // Every page is reserved now, so a full /dev/shm fails here with a
    // message instead of a SIGBUS on first touch. A new segment reads as
    // zeros.
    if (bytes > 0) {
      const int err = ::posix_fallocate(impl->object.get_mapping_handle().handle, 0, static_cast<off_t>(bytes));
      if (err != 0) {
        std::string free_space;
        struct statvfs fs {};
        if (::statvfs("/dev/shm", &fs) == 0)
          free_space = " (/dev/shm has " + format_bytes(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize) + " free)";
        throw_runtime("cannot reserve " + format_bytes(bytes) + " of shared memory for '/dev/shm/" + name +
                      "': " + std::strerror(err) + free_space +
                      ": give the machine or container more shared memory (docker run --shm-size), or use a "
                      "smaller batch or a memory_limit that splits it into micro-batches");
      }
    }
    impl->region = bip::mapped_region(impl->object, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    throw_runtime("cannot size shared-memory segment '/dev/shm/" + name + "' to " + std::to_string(bytes) +
                  " bytes: " + e.what());
  }
  seg.impl_ = std::move(impl);
  return seg;
}

ShmSegment ShmSegment::open(const std::string& name) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->object = bip::shared_memory_object(bip::open_only, name.c_str(), bip::read_write);
    impl->region = bip::mapped_region(impl->object, bip::read_write);
  } catch (const bip::interprocess_exception& e) {
    throw_runtime("cannot open shared-memory segment '/dev/shm/" + name + "': " + e.what());
  }
  return ShmSegment(name, false, std::move(impl));
}

void* ShmSegment::data() const {
  return impl_ ? impl_->region.get_address() : nullptr;
}
size_t ShmSegment::size() const {
  return impl_ ? impl_->region.get_size() : 0;
}

bool ShmSegment::remove(const std::string& name) {
  return bip::shared_memory_object::remove(name.c_str());
}

}  // namespace devmap
