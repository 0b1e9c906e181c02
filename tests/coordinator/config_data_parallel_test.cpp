// data_parallel: replicas, checked against the batch and the device names.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "coordinator/run/gradient_exchange.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::kMinimalModel;

std::string err(const std::string& rest) {
  return test::minimal_model_error(rest);
}

TEST(DataParallel, OneReplicaUnlessSaid) {
  EXPECT_EQ(load_config_text(kMinimalModel, "a.yaml").data_parallel.replicas, 1);
  const Config c = load_config_text(kMinimalModel + "data_parallel: {replicas: 4}\n", "a.yaml");
  EXPECT_EQ(c.data_parallel.replicas, 4);
  EXPECT_EQ(c.data_parallel.loc.prefix(), "a.yaml:8:17: ");
  EXPECT_EQ(load_config_text(kMinimalModel, "a.yaml", {"data_parallel.replicas=2"}).data_parallel.replicas, 2);
}

TEST(DataParallel, BucketSizeIsASizeAboveZero) {
  EXPECT_EQ(load_config_text(kMinimalModel, "a.yaml").data_parallel.bucket_size, int64_t{4} << 20);
  EXPECT_EQ(load_config_text(kMinimalModel + "data_parallel: {replicas: 2, bucket_size: 1MiB}\n", "a.yaml")
                .data_parallel.bucket_size,
            int64_t{1} << 20);
  EXPECT_EQ(err("data_parallel: {bucket_size: 0}\n"),
            "a.yaml:8:30: data_parallel.bucket_size must be above 0, e.g. 4MiB");
}

// The gradients in the order the backward pass makes them: the last op's first.
TEST(DataParallel, GradientsAreLaidOutInBackwardOrder) {
  const Config c = load_config_text(test::kMinimalModel, "a.yaml");
  const std::vector<GradientExchange::Entry> entries = GradientExchange::layout(c.graph);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name.substr(0, 7), "logits.");
  EXPECT_EQ(entries[0].offset, 0u);
  EXPECT_EQ(entries[1].offset, entries[0].count);
  EXPECT_EQ(entries[0].count + entries[1].count, 16u * 3 + 3);
}

// The default 4 MiB cuts the reference CNN's gradients in two: the
// logits' and fc1's weights (12.3 MiB: the bucket closes after them), then
// fc1's bias and the convolutions'.
TEST(DataParallel, TheDefaultBucketSizeCutsTheReferenceModelInTwo) {
  const Config c = load_config(std::string(DEVMAP_SOURCE_DIR) + "/configs/fashion_mnist_cnn.yaml");
  const auto entries = GradientExchange::layout(c.graph);
  const auto spans = GradientExchange::buckets(entries, c.data_parallel.bucket_size);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].offset, 0u);
  EXPECT_EQ(spans[1].offset, spans[0].count);
  EXPECT_EQ(spans[0].count + spans[1].count, 3274634u);
  EXPECT_EQ(entries[spans[1].first - 1].name, "fc1.weight.grad");
  EXPECT_EQ(entries[spans[1].first].name, "fc1.bias.grad");
  EXPECT_EQ(spans[1].end, entries.size());
  // A bucket closes once full: 1 byte buckets hold one gradient each.
  EXPECT_EQ(GradientExchange::buckets(entries, 1).size(), entries.size());
}

TEST(DataParallel, EachReplicaNeedsSamplesAndTheWholeMapOfItsHost) {
  EXPECT_EQ(err("data_parallel: {replicas: 0}\n"),
            "a.yaml:8:27: data_parallel.replicas must be between 1 and 64, got 0");
  EXPECT_EQ(err("train: {batch_size: 2}\ndata_parallel: {replicas: 3}\n"),
            "a.yaml:9:27: data_parallel.replicas 3 is more than train.batch_size 2: every replica trains on a share "
            "of each step's samples");
  EXPECT_EQ(err("hosts: [node1, node2]\ndevices: {node1/cpu:0: {}}\ndata_parallel: {replicas: 2}\n"),
            "a.yaml:10:27: data_parallel.replicas 2: each replica runs the whole device map on its own host, so "
            "device names carry no host, but 'node1/cpu:0' does");
  EXPECT_EQ(err("train: {max_restarts: 1}\ndata_parallel: {replicas: 2}\n"),
            "a.yaml:9:27: data_parallel.replicas 2 with train.max_restarts 1 is not built yet: a replica that "
            "restarted alone would leave the others; set train.max_restarts: 0 and resume the whole job with "
            "--resume");
  EXPECT_EQ(err("data_parallel: {replica: 2}\n").substr(0, 40), "a.yaml:8:17: unknown key 'replica' in da");
}

}  // namespace
}  // namespace devmap
