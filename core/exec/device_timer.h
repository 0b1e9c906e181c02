// DeviceTimer: device time of intervals of a device's work, for --profile.
// A device that runs its work asynchronously (a GPU: the calls return once
// the work is queued) times it with markers on its queue (CUDA events on
// the worker's stream), so a figure is the time the device spent, not the
// time the host took to enqueue. A device whose work runs in the calling
// thread (the CPU) has none: the executor reads the host's clock.
#pragma once

#include <vector>

namespace devmap {

class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // Marks the start of the next interval on the device's queue; returns its
  // index (0, 1, ... since the last collect() or clear()).
  virtual int start() = 0;
  // Marks the end of interval `index` (after the work issued since start()).
  virtual void stop(int index) = 0;
  // Waits for the device and returns every interval's seconds, by index;
  // then forgets them.
  virtual std::vector<double> collect() = 0;
  // Forgets the intervals without reading them (a pass that threw).
  virtual void clear() = 0;
};

}  // namespace devmap
