#!/usr/bin/python3
"""devmap and PyTorch train the same numbers on tests/configs/new_ops.yaml.

The model of avg_pool2d, global_avg_pool, concat and conv2d with stride,
dilation, groups and a depthwise layer, rebuilt in PyTorch from devmap's
initial weights and sample order (torch_equivalence.py's helpers): every
step's loss within rtol, devmap's checkpoint loads with
load_state_dict(strict=True) and holds PyTorch's trained weights, and
devmap's predict gives PyTorch's labels on >= 99.9% of 2000 test images.

  torch_equivalence_new_ops.py COORDINATOR CONFIG [--steps N] [--rtol R]

Exit 0 when all agree; 77 (skipped) without torch or the data.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_equivalence as te  # noqa: E402  (exits 77 without torch)
from torch_equivalence import np, torch, nn  # noqa: E402

F = nn.functional


class NewOpsNet(nn.Module):
    """tests/configs/new_ops.yaml in PyTorch, with devmap's op names."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.grouped = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=4)
        self.dilated = nn.Conv2d(8, 8, 3, stride=2, padding=2, dilation=2)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.logits = nn.Linear(424, 10)

    def forward(self, x):
        p1 = F.avg_pool2d(torch.relu(self.c1(x)), 2)
        p2 = F.avg_pool2d(self.depthwise(p1), 3, stride=2, padding=1)  # zeros counted: count_include_pad
        cat = torch.cat([self.grouped(p1), self.dilated(p1), p2], 1)
        gap = torch.relu(cat).mean((2, 3))
        return self.logits(torch.cat([gap, p1.mean((2, 3)), p2.flatten(1)], 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("coordinator")
    ap.add_argument("config")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--lr", type=float, default=0.1)
    a = ap.parse_args()
    a.coordinator, a.config = os.path.abspath(a.coordinator), os.path.abspath(a.config)  # runs in a temp dir
    limit = a.steps * a.batch
    if not os.path.exists(f"{te.DATA}/train-images-idx3-ubyte.gz"):
        print("skipped: Fashion-MNIST is absent (scripts/setup.sh)")
        sys.exit(77)

    tmpdir = tempfile.TemporaryDirectory()
    tmp = tmpdir.name
    metrics, weights = f"{tmp}/m.jsonl", f"{tmp}/model.safetensors"
    subprocess.run([a.coordinator, "train", a.config, "--metrics", metrics, "--log-every", "1",
                    "--set", f"train.seed={a.seed}", "--set", f"train.batch_size={a.batch}",
                    "--set", f"train.max_steps={a.steps}", "--set", f"data.train_limit={limit}",
                    "--set", "data.test_limit=10", "--set", "devices.cpu:0.threads=1",
                    "--set", "train.optimizer.type=momentum", "--set", f"train.optimizer.learning_rate={a.lr}",
                    "--set", "train.optimizer.momentum=0.9",
                    "--set", f"train.checkpoint={weights}"],
                   check=True, stderr=subprocess.DEVNULL, cwd=tmp)
    ours = [json.loads(l)["loss"] for l in open(metrics) if json.loads(l)["event"] == "step"]

    torch.set_num_threads(1)
    net = NewOpsNet()
    with torch.no_grad():
        for name, param in net.named_parameters():
            layer = name.split(".")[0]
            fan_in = int(np.prod(getattr(net, layer).weight.shape[1:]))
            param.copy_(te.init_param(a.seed, name, tuple(param.shape), fan_in))
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9)
    x, y = te.load("train", limit)
    order = torch.tensor(te.epoch_order(limit, a.seed, 1))
    theirs = []
    for s in range(a.steps):
        idx = order[s * a.batch:(s + 1) * a.batch]
        opt.zero_grad()
        loss = F.cross_entropy(net(x[idx]), y[idx])
        loss.backward()
        opt.step()
        theirs.append(loss.item())

    worst = max(abs(o - t) / abs(t) for o, t in zip(ours, theirs))
    for s in (0, 1, len(ours) // 2, len(ours) - 1):
        print(f"step {s + 1}: devmap {ours[s]:.7f}  pytorch {theirs[s]:.7f}")
    print(f"{len(ours)} steps, worst relative difference {worst:.2e} (tolerance {a.rtol:.0e})")
    ok = len(ours) == a.steps and worst <= a.rtol

    loaded = NewOpsNet()
    loaded.load_state_dict(te.read_safetensors(weights), strict=True)
    wdiff = max((p - q).abs().max().item() / max(q.abs().max().item(), 1e-12)
                for p, q in zip(loaded.state_dict().values(), net.state_dict().values()))
    print(f"checkpoint vs PyTorch's weights: worst relative difference {wdiff:.2e}")
    ok = ok and wdiff <= max(a.rtol, 1e-5) * 10

    ok = te.predictions_agree(a.coordinator, a.config, weights, loaded, tmp, cwd=tmp) and ok
    tmpdir.cleanup()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
