#include "transport/shm_segment.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/base/error.h"

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

// A segment larger than /dev/shm has room for fails when it is created, with
// the system's reason and what to do, and leaves no name behind; it never
// becomes a SIGBUS on first touch. Runs in a child process with a mount
// namespace of its own and a 1 MiB /dev/shm.
TEST(ShmSegment, ASegmentThatDoesNotFitFailsAtCreationAndLeavesNothing) {
  const std::string name = unique_name("too-big");  // before fork: the name carries this pid
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    auto report = [&](const std::string& what, int code) {
      ssize_t n = ::write(pipe_fds[1], what.data(), what.size());
      (void)n;
      ::_exit(code);
    };
    if (::unshare(CLONE_NEWNS) != 0 || ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0)
      report(std::string("cannot make a mount namespace: ") + std::strerror(errno), 77);
    try {
      ShmSegment s = ShmSegment::create(name, 4u << 20);
      report("created a 4 MiB segment in a 1 MiB /dev/shm", 1);
    } catch (const Error& e) {
      std::error_code ec;
      const bool empty = std::filesystem::is_empty("/dev/shm", ec);
      report(std::string(e.what()) + (empty ? "" : " [/dev/shm is not empty]"), empty ? 0 : 1);
    }
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) message.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << message;
  EXPECT_EQ(WEXITSTATUS(status), 0) << message;
  EXPECT_NE(message.find("cannot reserve 4.00 MiB of shared memory for '/dev/shm/" + name +
                         "': No space left on device (/dev/shm has "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("docker run --shm-size"), std::string::npos) << message;
}

}  // namespace
}  // namespace devmap
