// The hosts section and device names that carry a host, checked in full; a
// config without hosts runs on this machine as before. Whether the job's
// ranks match the hosts is job_ranks_test.cpp's.
#include <gtest/gtest.h>

#include "coordinator/config/hosts.h"
#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::kMinimalModel;

std::string err(const std::string& rest) {
  return test::minimal_model_error(rest);
}

TEST(Hosts, WithoutHostsEveryDeviceIsOnThisMachine) {
  const Config c = load_config_text(kMinimalModel + "devices: {cpu:0: {}, cpu:1: {}}\n", "a.yaml");
  EXPECT_TRUE(c.hosts.empty());
  for (const DeviceSpec& d : c.devices) EXPECT_EQ(d.host, "") << d.name;
}

TEST(Hosts, AValidConfigWithHostsLoadsWithEachDevicesHost) {
  const Config c = load_config_text(kMinimalModel +
                                        "hosts: [node1, node-2.lan, 10.0.0.3]\n"
                                        "devices: {node1/cpu:0: {threads: 2}, node-2.lan/gpu:0: {}, cpu:0: {}}\n"
                                        "device_map: {default: node1/cpu:0, place: {logits: node-2.lan/gpu:0}}\n",
                                    "a.yaml");
  EXPECT_EQ(c.hosts, (std::vector<std::string>{"node1", "node-2.lan", "10.0.0.3"}));
  EXPECT_EQ(c.hosts_loc.prefix(), "a.yaml:8:1: ");
  ASSERT_EQ(c.devices.size(), 3u);
  EXPECT_EQ(c.devices[0].host, "node1");
  EXPECT_EQ(c.devices[1].host, "node-2.lan");
  EXPECT_EQ(c.devices[2].host, "");
}

TEST(Hosts, MalformedHostsSections) {
  EXPECT_EQ(err("hosts: node1\n"),
            "a.yaml:8:8: hosts must be a list of host names, got 'node1', e.g. hosts: [node1, node2]");
  EXPECT_EQ(err("hosts: []\n"),
            "a.yaml:8:8: hosts must be a list of at least one host name, e.g. hosts: [node1, node2]");
  EXPECT_EQ(err("hosts: [node1, node1]\n"), "a.yaml:8:16: hosts lists 'node1' twice");
  EXPECT_EQ(err("hosts: [vm, VM]\n"),
            "a.yaml:8:13: hosts lists 'vm' and 'VM': host names ignore case, so they are the same host; list it once");
  EXPECT_EQ(err("hosts: [node1, [a]]\n"), "a.yaml:8:16: hosts must hold host names, got a list");
  EXPECT_EQ(err("hosts: [-node]\n"),
            "a.yaml:8:9: hosts: bad host name '-node' (a host name is 1-63 letters, digits, '-' and '.', starting "
            "with a letter or digit, e.g. node1)");
  EXPECT_EQ(err("hosts: [a/b]\n"),
            "a.yaml:8:9: hosts: bad host name 'a/b' (a host name is 1-63 letters, digits, '-' and '.', starting "
            "with a letter or digit, e.g. node1)");
}

TEST(Hosts, DeviceNamesWithHosts) {
  EXPECT_EQ(err("hosts: [node1, node2]\ndevices: {node3/cpu:0: {}}\n"),
            "a.yaml:9:11: devices: device 'node3/cpu:0' names host 'node3', which is not declared in hosts "
            "(declared: node1, node2)");
  EXPECT_EQ(err("devices: {node1/cpu:0: {}}\n"),
            "a.yaml:8:11: devices: device 'node1/cpu:0' names host 'node1', but the config has no hosts section "
            "(declare it, e.g. hosts: [node1], or write 'cpu:0' for this machine)");
  EXPECT_EQ(err("hosts: [node1]\ndevices: {/cpu:0: {}}\n"),
            "a.yaml:9:11: devices: bad host name '' in device name '/cpu:0' (a host name is 1-63 letters, digits, "
            "'-' and '.', starting with a letter or digit, e.g. node1)");
  EXPECT_EQ(err("hosts: [node1]\ndevices: {node1/tpu:0: {}}\n"),
            "a.yaml:9:11: devices: bad device name 'node1/tpu:0' (expected cpu:N or gpu:N, e.g. cpu:0)");
  EXPECT_EQ(err("hosts: [node1]\ndevices: {node1/cpu:0/x: {}}\n"),
            "a.yaml:9:11: devices: bad device name 'node1/cpu:0/x' (expected cpu:N or gpu:N, e.g. cpu:0)");
  // A use of a device names it with its host, as declared.
  EXPECT_EQ(err("hosts: [node1]\ndevices: {node1/cpu:0: {}}\ndevice_map: {default: cpu:0}\n"),
            "a.yaml:10:23: device_map.default is 'cpu:0', which is not declared in devices (declared: node1/cpu:0)");
  EXPECT_EQ(err("hosts: [node1]\ndevices: {node1/cpu:0: {}}\ndevice_map: {default: node1//cpu:0}\n"),
            "a.yaml:10:23: device_map.default: bad device name 'node1//cpu:0' (expected cpu:N or gpu:N, e.g. cpu:0)");
}

TEST(Hosts, SplitAndSyntax) {
  EXPECT_EQ(split_host("node1/gpu:0").host, "node1");
  EXPECT_EQ(split_host("node1/gpu:0").device, "gpu:0");
  EXPECT_EQ(split_host("cpu:1").host, "");
  EXPECT_TRUE(is_device_name_syntax("cpu:1"));
  EXPECT_TRUE(is_device_name_syntax("10.0.0.2/cpu:1"));
  EXPECT_FALSE(is_device_name_syntax("/cpu:1"));
  EXPECT_FALSE(is_device_name_syntax("node1/"));
  EXPECT_FALSE(is_valid_host_name(std::string(64, 'a')));
  EXPECT_TRUE(is_valid_host_name(std::string(63, 'a')));
}

}  // namespace
}  // namespace devmap
