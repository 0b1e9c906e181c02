// HostStages (coordinator/run/host_stages.h): which cut edges a host relays, and
// how every rank's answer to a step adds up to the job's. The bytes between
// ranks go through the links JobRanks makes from MPI; here the links hand
// back what each rank would have sent (the multi-host tests run them over
// MPI between namespace hosts).
#include "coordinator/run/host_stages.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace devmap {
namespace {

ChannelEdge edge(int id, const std::string& producer, std::vector<std::string> consumers) {
  return ChannelEdge{id, "seg" + std::to_string(id), 64, 2, producer, std::move(consumers)};
}

const std::map<std::string, int> kRanks{{"node1/cpu:0", 0}, {"node1/cpu:1", 0}, {"node2/cpu:0", 1}, {"node3/cpu:0", 2}};

TEST(HostStages, RelaysTheEdgesWithADeviceHereAndOneElsewhere) {
  RelayPlan seen;
  HostLinks links;
  links.relay = [&](RelayPlan plan) {
    seen = std::move(plan);
    return std::unique_ptr<EdgeRelay>();
  };
  HostStages stages(1, kRanks, links);
  EXPECT_TRUE(stages.local("node2/cpu:0"));
  EXPECT_FALSE(stages.local("node1/cpu:0"));
  EXPECT_THROW(stages.rank_of("node9/cpu:0"), Error);
  stages.relay({edge(0, "node1/cpu:0", {"node1/cpu:1"}),                 // node1 alone
                edge(1, "node1/cpu:1", {"node2/cpu:0"}),                 // into node2
                edge(2, "node2/cpu:0", {"node1/cpu:0", "node3/cpu:0"}),  // out of node2
                edge(3, "node1/cpu:0", {"node3/cpu:0"})},                // node2 takes no part
               {{"node2/cpu:0", "/run/x.sock"}});
  EXPECT_EQ(seen.rank, 1);
  ASSERT_EQ(seen.edges.size(), 2u);
  EXPECT_EQ(seen.edges[0].edge.id, 1);
  EXPECT_EQ(seen.edges[0].producer_rank, 0);
  EXPECT_EQ(seen.edges[0].consumer_ranks, std::vector<int>{1});
  EXPECT_EQ(seen.edges[1].edge.id, 2);
  EXPECT_EQ(seen.edges[1].consumer_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(seen.endpoints.at("node2/cpu:0"), "/run/x.sock");
}

TEST(HostStages, EveryRankGetsTheResultsOfAllRanksAddedInRankOrder) {
  // Rank 0 runs the convolutions (no loss), rank 1 the loss and accuracy.
  StepResult convs, dense;
  convs.compute_seconds = 0.04;
  convs.micro = {{0, 0}, {0, 0}};
  dense.loss = 2.25f;
  dense.metric = 0.5f;
  dense.compute_seconds = 0.01;
  dense.micro = {{2.5f, 0.25f}, {2.0f, 0.75f}};
  wire::ParamStat stat{};
  wire::copy_name(stat.name, "fc1.weight");
  stat.grad_norm = 3;
  dense.param_stats = {stat};
  int pumped = 0;
  HostLinks links;
  links.allgather = [&](const std::string& mine, const std::function<void()>& pump) {
    pump();
    EXPECT_EQ(decode_step_result(mine).compute_seconds, 0.04);
    return std::vector<std::string>{mine, encode_step_result(dense)};
  };
  HostStages stages(0, kRanks, links);
  StepResult r = convs;
  stages.combine(r, [&] { ++pumped; });
  EXPECT_EQ(pumped, 1);
  EXPECT_EQ(r.loss, 2.25f);
  EXPECT_EQ(r.metric, 0.5f);
  EXPECT_EQ(r.compute_seconds, 0.04);
  ASSERT_EQ(r.micro.size(), 2u);
  EXPECT_EQ(r.micro[1].loss, 2.0f);
  EXPECT_EQ(r.micro[1].metric, 0.75f);
  ASSERT_EQ(r.param_stats.size(), 1u);
  EXPECT_EQ(wire::read_name(r.param_stats[0].name), "fc1.weight");
}

TEST(HostStages, AMalformedResultIsAnError) {
  StepResult r;
  r.micro = {{1, 1}};
  std::string bytes = encode_step_result(r);
  EXPECT_EQ(decode_step_result(bytes).micro.size(), 1u);
  EXPECT_THROW(decode_step_result(bytes.substr(0, bytes.size() - 1)), Error);
  EXPECT_THROW(decode_step_result("abc"), Error);
}

}  // namespace
}  // namespace devmap
