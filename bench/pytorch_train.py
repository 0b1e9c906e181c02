#!/usr/bin/python3
"""The reference CNN (or the MLP) trained in PyTorch, for side-by-side numbers.

Same model, initialisation (PyTorch's defaults, which devmap copies), optimizer
(SGD, momentum 0.9, lr 0.01) and batch (64) as configs/fashion_mnist_*.yaml.
Prints the median step time after warm-up, the images/s it implies, the wall
time of the run and the test accuracy. --compile runs the model through
torch.compile (Inductor, PyTorch 2): its compilation happens in the first
steps, which the median leaves out (5 warm-up steps), and is printed apart
(compile_s: the first step's time).

  /usr/bin/python3 bench/pytorch_train.py [--model cnn|mlp] [--threads N] [--steps N] [--epochs N] [--seed S] [--compile]
"""
import argparse
import gzip
import statistics
import time

from require import require

require("numpy", "torch")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def load(kind):
    with gzip.open(f"{DATA}/{kind}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255
    with gzip.open(f"{DATA}/{kind}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 1024), nn.ReLU(), nn.Linear(1024, 10))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0, help="stop after N steps (0: whole epochs)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compile", action="store_true", help="run the model through torch.compile")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    net = model(a.model)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    run = torch.compile(net) if a.compile else net
    loss_fn = nn.CrossEntropyLoss()
    def test_accuracy():
        with torch.no_grad():
            return sum((net(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                       for i in range(0, len(xte), 1000)) / len(xte)

    step_times, step, accuracies = [], 0, []
    start = time.perf_counter()
    for _ in range(a.epochs):
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), a.batch):
            t0 = time.perf_counter()
            idx = perm[i:i + a.batch]
            opt.zero_grad()
            loss = loss_fn(run(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            step_times.append(time.perf_counter() - t0)
            step += 1
            if a.steps and step >= a.steps:
                break
        if a.steps and step >= a.steps:
            break
        if not a.steps:
            accuracies.append(test_accuracy())
    wall = time.perf_counter() - start
    if not accuracies:
        accuracies.append(test_accuracy())
    med = statistics.median(step_times[5:] or step_times)
    runtime = "torch.compile" if a.compile else "pytorch"
    print(f"{runtime} {torch.__version__} {a.model} threads={a.threads} steps={step} compile_s={step_times[0]:.1f} "
          f"median_step_ms={med * 1e3:.2f} median_images/s={a.batch / med:.0f} wall_s={wall:.1f} "
          f"test_accuracy_per_epoch={','.join(f'{x:.4f}' for x in accuracies)}")


if __name__ == "__main__":
    main()
