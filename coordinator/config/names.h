// Name rules of the config: valid op and device names (the message helpers
// they use are in config/yaml/messages.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/config/yaml/messages.h"
#include "core/base/device_kind.h"

namespace devmap {

// Op names: [A-Za-z_][A-Za-z0-9_.-]*.
bool is_valid_op_name(const std::string& name);

struct DeviceName {
  DeviceKind kind;
  int index;
};
// "cpu:N" or "gpu:N" with N a decimal integer without leading zeros.
std::optional<DeviceName> parse_device_name(const std::string& name);
// "bad device name 'tpu:0' (expected cpu:N or gpu:N, e.g. cpu:0)".
std::string bad_device_name_message(const std::string& name);

}  // namespace devmap
