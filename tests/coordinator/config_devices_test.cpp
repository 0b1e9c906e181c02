// The devices section: threads, memory_limit, affinity and offload of each worker.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;
using test::kMinimalModel;

TEST(Devices, AffinityIsAListOfDistinctCores) {
  const Config c = load_config_text(kMinimalModel +
                                        "devices:\n"
                                        "  cpu:0: {threads: 2, affinity: [3, 1]}\n"
                                        "  cpu:1: {affinity: []}\n"
                                        "  cpu:2: {threads: 1}\n",
                                    "a.yaml");
  EXPECT_EQ(c.devices[0].affinity, (std::vector<int>{3, 1}));  // as written
  EXPECT_TRUE(c.devices[1].affinity.empty());                  // [] = not pinned
  EXPECT_TRUE(c.devices[2].affinity.empty());
  EXPECT_EQ(load_config_text(kMinimalModel + "devices: {cpu:0: {affinity: [1023]}}\n", "a.yaml").devices[0].affinity,
            std::vector<int>{1023});
}

TEST(Devices, AffinityMistakes) {
  auto err = [](const std::string& devices) {
    return error_of([&] { load_config_text(kMinimalModel + devices, "a.yaml"); });
  };
  EXPECT_EQ(err("devices: {cpu:0: {affinity: 2}}\n"),
            "a.yaml:8:29: devices.cpu:0.affinity must be a list of CPU core ids such as [0, 1], got '2'");
  EXPECT_EQ(err("devices:\n  cpu:0:\n    affinity:\n"),
            "a.yaml:10:5: devices.cpu:0.affinity must be a list of CPU core ids such as [0, 1], got an empty value");
  EXPECT_EQ(err("devices: {cpu:0: {affinity: [0, one]}}\n"),
            "a.yaml:8:33: devices.cpu:0.affinity must hold CPU core ids (integers), got 'one'");
  EXPECT_EQ(err("devices: {cpu:0: {affinity: [-1]}}\n"),
            "a.yaml:8:30: devices.cpu:0.affinity must hold core ids between 0 and 1023, got -1");
  EXPECT_EQ(err("devices: {cpu:0: {affinity: [1024]}}\n"),
            "a.yaml:8:30: devices.cpu:0.affinity must hold core ids between 0 and 1023, got 1024");
  EXPECT_EQ(err("devices: {cpu:0: {affinity: [4, 5, 4]}}\n"), "a.yaml:8:36: devices.cpu:0.affinity lists core 4 twice");
  EXPECT_EQ(err("devices: {cpu:0: {afinity: [1]}}\n"),
            "a.yaml:8:19: unknown key 'afinity' in devices.cpu:0 (did you mean 'affinity'?)");
}

TEST(Devices, AffinityCanBeSetOnTheCommandLine) {
  const std::string base = kMinimalModel + "devices: {cpu:0: {}, cpu:1: {affinity: [0]}}\n";
  const Config c = load_config_text(base, "a.yaml", {"devices.cpu:1.affinity=[1]", "devices.cpu:0.affinity=[2, 3]"});
  EXPECT_EQ(c.devices[0].affinity, (std::vector<int>{2, 3}));
  EXPECT_EQ(c.devices[1].affinity, std::vector<int>{1});
  EXPECT_TRUE(load_config_text(base, "a.yaml", {"devices.cpu:1.affinity=[]"}).devices[1].affinity.empty());
  EXPECT_EQ(error_of([&] { load_config_text(base, "a.yaml", {"devices.cpu:1.affinity=[1, 1]"}); }),
            "--set devices.cpu:1.affinity=[1, 1]: devices.cpu:1.affinity lists core 1 twice");
}

TEST(Devices, OffloadIsNoneOrParameters) {
  const Config c = load_config_text(kMinimalModel +
                                        "devices:\n"
                                        "  cpu:0: {offload: parameters}\n"
                                        "  cpu:1: {offload: none}\n"
                                        "  cpu:2: {}\n",
                                    "a.yaml");
  EXPECT_TRUE(c.devices[0].offload);
  EXPECT_FALSE(c.devices[1].offload);
  EXPECT_FALSE(c.devices[2].offload);
  const std::string base = kMinimalModel + "devices: {cpu:0: {}}\n";
  EXPECT_TRUE(load_config_text(base, "a.yaml", {"devices.cpu:0.offload=parameters"}).devices[0].offload);
  const Config gpu = load_config_text(kMinimalModel + "devices: {cpu:0: {}, gpu:0: {offload: parameters}}\n", "a.yaml");
  EXPECT_TRUE(gpu.devices[1].offload) << "a GPU offloads too";
}

TEST(Devices, OffloadMistakes) {
  auto err = [](const std::string& devices) {
    return error_of([&] { load_config_text(kMinimalModel + devices, "a.yaml"); });
  };
  EXPECT_EQ(err("devices: {cpu:0: {offload: weights}}\n"),
            "a.yaml:8:28: devices.cpu:0.offload must be one of none, parameters, got 'weights'");
}

}  // namespace
}  // namespace devmap
