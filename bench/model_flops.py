#!/usr/bin/python3
"""FLOPs per image of a bench model (bench/pytorch_train.py's cnn or mlp),
counted from its layers: a multiply-add is 2 FLOPs; forward = every conv and
linear layer; a training step = forward + the weight gradients (as many) +
the input gradients (as many, except the first layer's, whose input is the
image). Pooling, ReLU, loss and optimizer are not counted.

  model_flops.py cnn|mlp      prints: forward=<F> train=<T> (FLOPs per image)
"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from require import require  # noqa: E402

require("torch")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from pytorch_train import model  # noqa: E402


def main():
    net = model(sys.argv[1] if len(sys.argv) > 1 else "cnn")
    per_layer = []

    def hook(m, _inp, out):
        if isinstance(m, nn.Conv2d):
            macs = out[0].numel() * m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
        else:
            macs = m.in_features * m.out_features
        per_layer.append(2 * macs)

    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            m.register_forward_hook(hook)
    with torch.no_grad():
        net(torch.zeros(1, 1, 28, 28))
    fwd = sum(per_layer)
    print(f"forward={fwd} train={3 * fwd - per_layer[0]}")


if __name__ == "__main__":
    main()
