// devmap_run_guard PREFIX RUN_DIR LOCK_FILE: removes a run's files once its
// coordinator is gone, however it went (SIGKILL included, and before any
// worker exists to do it). The coordinator starts it with the read end of a
// pipe as stdin and keeps the write end; when the coordinator's process
// ends, the pipe reads end-of-file. Then every shared-memory segment whose
// name starts with PREFIX, the run's socket directory and the lock file go,
// unless another process still holds the run's lock 5 s later (the
// coordinator unlocks by dying or by cleaning up itself). After a normal
// exit the coordinator has removed them already and this finds nothing.
// Ignores SIGINT, SIGTERM and SIGHUP: Ctrl-C reaches the whole foreground
// process group, and this must outlive the coordinator it guards.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "transport/run_cleanup.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: devmap_run_guard PREFIX RUN_DIR LOCK_FILE (started by the coordinator)\n");
    return 2;
  }
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);
  char buf[64];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  // The pipe can read end-of-file a moment before a dying coordinator's
  // lock is released (the kernel closes its descriptors one by one), so a
  // held lock is asked again for a while; one held for longer belongs to a
  // live process, whose run is not ours to remove.
  const int fd = ::open(argv[3], O_RDWR | O_CLOEXEC);
  for (int i = 0; fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0; ++i) {
    if (i == 500) return 0;
    ::usleep(10000);
  }
  devmap::remove_run_files(argv[1], argv[2]);
  if (fd >= 0) ::close(fd);
  return 0;
}
