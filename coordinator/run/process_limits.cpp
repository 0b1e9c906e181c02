#include "coordinator/run/process_limits.h"

#include <sched.h>
#include <sys/resource.h>

#include <string>

namespace devmap {

int descriptors_needed(int devices) {
  return 64 + 8 * devices;
}

namespace {

void check_descriptors(int devices) {
  const rlim_t need = static_cast<rlim_t>(descriptors_needed(devices));
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return;
  if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max >= need) {
    struct rlimit raised = lim;
    raised.rlim_cur = need;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  }
  throw_invalid("a run with " + std::to_string(devices) + " device" + (devices == 1 ? "" : "s") + " needs up to " +
                std::to_string(need) + " open files, but this process may open only " + std::to_string(lim.rlim_cur) +
                " (ulimit -n): raise the limit, for example with 'ulimit -n 1024'");
}

// "0-3, 6": the cores in `set`.
std::string describe(const cpu_set_t& set) {
  std::string s;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    s += (s.empty() ? "" : ", ") + std::to_string(c) + (e > c ? "-" + std::to_string(e) : "");
    c = e;
  }
  return s;
}

void check_affinity(const Config& config) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  for (const DeviceSpec& d : config.devices)
    for (int core : d.affinity)
      if (core >= CPU_SETSIZE || !CPU_ISSET(core, &allowed))
        throw_invalid(d.loc.prefix() + "devices." + d.name + ".affinity lists core " + std::to_string(core) +
                      ", which this machine does not offer (the cores this process may use: " + describe(allowed) +
                      "): list those, or leave affinity out");
}

}  // namespace

void check_process_limits(const Config& config) {
  check_affinity(config);
  check_descriptors(static_cast<int>(config.devices.size()));
}

}  // namespace devmap
