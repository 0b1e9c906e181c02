#include "coordinator/util/process_gone.h"

#include <signal.h>

#include <cerrno>

namespace devmap {

bool pid_gone(int pid) {
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace devmap
