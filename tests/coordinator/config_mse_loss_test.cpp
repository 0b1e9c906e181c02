// mse_loss's target is any op's output of the prediction's shape: the
// labels op (a regression on the class index) or, say, the flattened image
// (an autoencoder). Only ops that read class labels are held to the labels
// op's class count.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "tests/coordinator/config_test_util.h"

namespace devmap {
namespace {

using test::error_of;

const std::string kHead =
    "model:\n"
    "  ops:\n"
    "    - {name: image, op: input, shape: [1, 4, 4]}\n"
    "    - {name: label, op: labels, classes: 3}\n"
    "    - {name: flat, op: flatten, inputs: [image]}\n";

TEST(ConfigMseLoss, TargetsTheLabelsOp) {
  const Config c = load_config_text(kHead +
                                        "    - {name: out, op: dense, inputs: [flat], units: 1}\n"
                                        "    - {name: loss, op: mse_loss, inputs: [out, label]}\n",
                                    "c.yaml");
  EXPECT_EQ(c.graph.node(c.graph.find_role(OpRole::kLoss)).op(), "mse_loss");
}

TEST(ConfigMseLoss, TargetsAnotherOp) {
  const Config c = load_config_text(kHead +
                                        "    - {name: code, op: dense, inputs: [flat], units: 4}\n"
                                        "    - {name: act, op: tanh, inputs: [code]}\n"
                                        "    - {name: out, op: dense, inputs: [act], units: 16}\n"
                                        "    - {name: loss, op: mse_loss, inputs: [out, flat]}\n",
                                    "c.yaml");
  EXPECT_EQ(c.graph.node(c.graph.find_role(OpRole::kLoss)).inputs.size(), 2u);
}

TEST(ConfigMseLoss, ShapesMustAgreeAtTheOp) {
  EXPECT_EQ(error_of([] {
              load_config_text(kHead +
                                   "    - {name: out, op: dense, inputs: [flat], units: 2}\n"
                                   "    - {name: loss, op: mse_loss, inputs: [out, label]}\n",
                               "c.yaml");
            }),
            "c.yaml:7:7: mse_loss 'loss': prediction [2] and target [1] must have the same shape per sample");
}

}  // namespace
}  // namespace devmap
