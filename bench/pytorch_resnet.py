#!/usr/bin/python3
"""configs/fashion_mnist_resnet.yaml trained in PyTorch with PyTorch's own
random numbers: the accuracy peer of bench/resnet_accuracy.sh and the training
peer of bench/resnet_speed.sh.

The model is tests/python/torch_equivalence_resnet.py's ResNet (devmap's op
names), initialised by PyTorch's defaults after torch.manual_seed(seed). What
matches devmap's config and kernels:

- data: the Fashion-MNIST training images scaled to [0, 1] (no other
  normalisation), reshuffled every epoch (torch.randperm), batches of
  --batch with the last one short (60000 / 128: 468 of 128 and one of 96),
  the loss the mean softmax cross-entropy of the batch;
- optimizer: torch.optim.SGD over every trained parameter (conv weights,
  batch_norm scale and shift, the classifier's weight and bias), momentum
  0.9, dampening 0, weight_decay 5e-4 added to the gradient of each of them
  (devmap's momentum kernel: g' = g + wd p; v = m v + g'; p -= lr v, for
  every trained parameter; the running statistics are state, not trained);
- learning rate per update (core/exec/lr_schedule.h, PyTorch's
  SequentialLR(LinearLR(start_factor=1/3, total_iters=W), CosineAnnealingLR(
  T_max=T - W, eta_min=0), milestones=[W])), written out as a LambdaLR so
  every step's rate is the closed form devmap computes: update s (1-based),
  e = s - 1: e < W: lr (1/3 + (2/3) e / W); else lr (1 + cos(pi (e - W) /
  (T - W))) / 2, T the run's updates (epochs x steps per epoch, or --steps);
- batch_norm: nn.BatchNorm2d's defaults (momentum 0.1, eps 1e-5), the batch's
  statistics when training, the running ones when evaluating;
- test accuracy: the 10000 test images in eval mode after every epoch (devmap
  evaluates after every epoch too).

  pytorch_resnet.py [--seed S] [--epochs 5] [--threads N] [--steps N] [--train-limit N]
                    [--test-limit N] [--batch 128] [--lr 0.1] [--warmup 200] [--lr-log FILE] [--compile]

Prints one line: "pytorch <version> resnet threads=... steps=...
median_step_ms=... median_images/s=... wall_s=... test_accuracy_per_epoch=a,b,..
test_accuracy=<last>". The median step (after 5 warm-up steps) times a batch
gathered from the training set in memory to the updated weights and the new
rate. --steps N stops after N updates (the schedule then spans N; the test
accuracy is taken once at the end). --train-limit and --test-limit use the
first N images of each set (0: all), as devmap's data.train_limit and
data.test_limit do. --lr-log writes every update's rate, one
per line, for comparison with devmap's step events.
"""
import argparse
import math
import os
import statistics
import sys
import time

from require import require

require("numpy", "torch")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
import torch_equivalence as te  # noqa: E402  (the data loader)
from torch_equivalence_resnet import ResNet  # noqa: E402

torch, nn = te.torch, te.nn

MOMENTUM, WEIGHT_DECAY, WARMUP_START_FACTOR = 0.9, 5e-4, 1.0 / 3.0  # configs/fashion_mnist_resnet.yaml


def rate_factor(update, warmup, total):
    """devmap's learning_rate_at(1, cosine schedule, update) (core/exec/lr_schedule.cpp), update 1-based."""
    e = update - 1
    if e < warmup:
        return WARMUP_START_FACTOR + (1 - WARMUP_START_FACTOR) * e / warmup
    return (1 + math.cos(math.pi * (e - warmup) / (total - warmup))) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0, help="stop after N updates (0: whole epochs)")
    ap.add_argument("--train-limit", type=int, default=0, help="the first N training images (0: all)")
    ap.add_argument("--test-limit", type=int, default=0, help="the first N test images (0: all)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--lr-log", help="write every update's learning rate here")
    ap.add_argument("--compile", action="store_true",
                    help="train through torch.compile (compiled in the first steps, which the median leaves out)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = te.load("train", a.train_limit or None)
    xte, yte = te.load("t10k", a.test_limit or None)
    per_epoch = (len(xtr) + a.batch - 1) // a.batch
    total = a.steps or a.epochs * per_epoch
    if total <= a.warmup:
        ap.error(f"--warmup {a.warmup} leaves none of the run's {total} updates for the cosine")

    net = ResNet()
    run = torch.compile(net) if a.compile else net
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    # LambdaLR's step k sets the rate of update k + 1.
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: rate_factor(k + 1, a.warmup, total))
    loss_fn = nn.CrossEntropyLoss()

    def test_accuracy():
        net.eval()
        with torch.no_grad():
            right = sum((net(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                        for i in range(0, len(xte), 1000))
        net.train()
        return right / len(xte)

    step_times, rates, accuracies, step = [], [], [], 0
    start = time.perf_counter()
    net.train()
    while step < total:
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), a.batch):
            t0 = time.perf_counter()
            idx = perm[i:i + a.batch]
            rates.append(opt.param_groups[0]["lr"])
            opt.zero_grad()
            loss = loss_fn(run(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            sched.step()
            step_times.append(time.perf_counter() - t0)
            step += 1
            if step >= total:
                break
        if not a.steps and step % per_epoch == 0:
            accuracies.append(test_accuracy())
    wall = time.perf_counter() - start
    if not accuracies:
        accuracies.append(test_accuracy())
    if a.lr_log:
        with open(a.lr_log, "w") as f:
            f.writelines(f"{r!r}\n" for r in rates)
    med = statistics.median(step_times[5:] or step_times)
    runtime = "torch.compile" if a.compile else "pytorch"
    print(f"{runtime} {torch.__version__} resnet threads={a.threads} steps={step} compile_s={step_times[0]:.1f} "
          f"median_step_ms={med * 1e3:.2f} median_images/s={a.batch / med:.0f} wall_s={wall:.1f} "
          f"test_accuracy_per_epoch={','.join(f'{x:.4f}' for x in accuracies)} test_accuracy={accuracies[-1]:.4f}")


if __name__ == "__main__":
    main()
