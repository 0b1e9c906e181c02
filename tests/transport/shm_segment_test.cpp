#include "transport/shm_segment.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/error.h"

namespace devmap {
namespace {

std::string unique_name(const char* what) {
  return "devmap-" + std::to_string(::getpid()) + "-test-" + what;
}

TEST(ShmSegment, CreatedExclusivelyWithMode0600AndRemovedByItsOwner) {
  std::string name = unique_name("owner");
  {
    ShmSegment seg = ShmSegment::create(name, 4096);
    struct stat st {};
    ASSERT_EQ(::stat(("/dev/shm/" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_GE(seg.size(), 4096u);
    EXPECT_THROW(ShmSegment::create(name, 4096), Error) << "a second create of the same name must fail";
  }
  struct stat st {};
  EXPECT_NE(::stat(("/dev/shm/" + name).c_str(), &st), 0) << "the owner's destructor removes the segment";
}

TEST(ShmSegment, AnOpenerSeesTheOwnersBytesAndNeverRemovesTheName) {
  std::string name = unique_name("opener");
  ShmSegment owner = ShmSegment::create(name, 1024);
  std::memcpy(owner.data(), "hello", 6);
  {
    ShmSegment reader = ShmSegment::open(name);
    EXPECT_STREQ(static_cast<const char*>(reader.data()), "hello");
    static_cast<char*>(reader.data())[0] = 'j';
  }
  EXPECT_STREQ(static_cast<const char*>(owner.data()), "jello");
  EXPECT_NO_THROW(ShmSegment::open(name)) << "closing an opener must not remove the segment";
}

TEST(ShmSegment, OpeningAMissingSegmentIsAnError) {
  EXPECT_THROW(ShmSegment::open(unique_name("missing")), Error);
}

TEST(ShmSegment, MovedFromSegmentsDoNotRemoveTwice) {
  std::string name = unique_name("moved");
  ShmSegment a = ShmSegment::create(name, 64);
  ShmSegment b = std::move(a);
  EXPECT_FALSE(a.owner());
  EXPECT_TRUE(b.owner());
  EXPECT_NO_THROW(ShmSegment::open(name));
}

}  // namespace
}  // namespace devmap
