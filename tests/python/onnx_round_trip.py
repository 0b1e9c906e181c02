#!/usr/bin/python3
"""A PyTorch model devmap never saw, through ONNX and back.

torch.onnx.export writes a small ResNet-style net (conv, batch norm, relu,
max pool, a basic block with a residual add, global average pooling,
flatten, linear) into a temporary folder; `devmap import` turns it into a
config and weights; devmap trains it for --steps steps split over cpu:0 and
cpu:1 (train.init_weights: the exported weights), exports it with
`devmap export`, and predicts the 10000 Fashion-MNIST test images with
--probabilities. Then the exported ONNX file is run here, node by node as
the file says (each ONNX op by its torch.nn.functional twin, attributes as
written: ONNX Runtime is not a Debian package, and Debian's python3-onnx
1.12 has no onnx.reference evaluator), on the same images:

- every label equals devmap's, and every probability is within --atol;
- the exported running statistics are not their initial values (the
  training updated them) and the exported num_batches_tracked is absent
  (ONNX keeps no count).

With --onnxruntime PYTHON (an interpreter that imports onnxruntime, as
bench/onnx_runtime_check.sh gives it), ONNX Runtime runs the exported file
too, under the same checks.

  onnx_round_trip.py COORDINATOR [--steps N] [--atol A] [--onnxruntime PYTHON]

Exit 77 (skipped) without torch, numpy or python3-onnx.
"""
import argparse
import csv
import gzip
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnx.numpy_helper
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e} (scripts/setup.sh installs python3-torch, python3-numpy, python3-onnx)")
    sys.exit(77)

DATA = "/usr/share/datasets/fashion-mnist/"


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.layer1 = Block(8)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        return self.fc(torch.flatten(self.gap(x), 1))


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout + r.stderr


# Runs MODEL on the images of IMAGES.npy in ONNX Runtime, saving the softmax to OUT.npy.
ORT_SCRIPT = """
import sys
import numpy as np
import onnxruntime as ort
model, images, out = sys.argv[1:]
s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
logits = s.run(None, {s.get_inputs()[0].name: np.load(images)})[0]
e = np.exp(logits - logits.max(1, keepdims=True))
np.save(out, e / e.sum(1, keepdims=True))
"""


def run_onnx(model, x):
    """Evaluates the ONNX graph on x with torch's functional ops."""
    env = {t.name: torch.from_numpy(onnx.numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
    env[model.graph.input[0].name] = x
    for n in model.graph.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in n.attribute}
        i = [env[name] for name in n.input]
        if n.op_type == "Conv":
            p = a.get("pads", [0, 0, 0, 0])
            assert p[0] == p[2] and p[1] == p[3]
            y = F.conv2d(i[0], i[1], i[2] if len(i) > 2 else None, stride=a.get("strides", [1, 1]),
                         padding=p[:2], dilation=a.get("dilations", [1, 1]), groups=a.get("group", 1))
        elif n.op_type == "BatchNormalization":
            y = F.batch_norm(i[0], i[3], i[4], i[1], i[2], training=False, eps=a.get("epsilon", 1e-5))
        elif n.op_type == "Relu":
            y = F.relu(i[0])
        elif n.op_type == "MaxPool":
            y = F.max_pool2d(i[0], a["kernel_shape"], a.get("strides"), a.get("pads", [0, 0])[:2])
        elif n.op_type == "Add":
            y = i[0] + i[1]
        elif n.op_type == "GlobalAveragePool":
            y = i[0].mean(dim=(2, 3), keepdim=True)
        elif n.op_type == "Flatten":
            y = torch.flatten(i[0], a.get("axis", 1))
        elif n.op_type == "Gemm":
            assert a.get("transB") == 1 and a.get("transA", 0) == 0
            y = F.linear(i[0], i[1], i[2] if len(i) > 2 else None)
        else:
            sys.exit(f"the exported model has an op this check does not run: {n.op_type}")
        env[n.output[0]] = y
    return env[model.graph.output[0].name]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("coordinator")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--onnxruntime", metavar="PYTHON", help="also run the export in ONNX Runtime under PYTHON")
    args = ap.parse_args()
    args.coordinator = os.path.abspath(args.coordinator)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        net = Net().train()
        # PRESERVE in train mode keeps BatchNormalization as a node (EVAL
        # folds it into the conv before it).
        torch.onnx.export(net, torch.zeros(1, 1, 28, 28), os.path.join(tmp, "net.onnx"),
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                          input_names=["image"], output_names=["logits"])
        print(run([args.coordinator, "import", "net.onnx"], tmp), end="")
        config = os.path.join(tmp, "net.yaml")
        text = open(config).read()
        devices = "devices:\n  cpu:0: {threads: 1, memory_limit: 0}\n\ndevice_map:\n  default: cpu:0\n"
        assert devices in text, text
        text = text.replace(devices, "devices:\n  cpu:0: {threads: 1, memory_limit: 0}\n"
                            "  cpu:1: {threads: 1, memory_limit: 0}\n\ndevice_map:\n  default: cpu:0\n"
                            "  place:\n    \"layer1.*\": cpu:1\n    \"gap*\": cpu:1\n    fc: cpu:1\n"
                            "    loss: cpu:1\n    accuracy: cpu:1\n")
        open(config, "w").write(text)
        sets = ["--set", f"train.max_steps={args.steps}", "--set", "train.epochs=1"]
        out = run([args.coordinator, "train", "net.yaml", "--out-dir", "run", "--log-placement"] + sets, tmp)
        placed = [line for line in out.splitlines() if "cpu:1" in line and "layer1.conv1" in line]
        assert placed, f"layer1.conv1 is not on cpu:1:\n{out}"
        print("\n".join(line for line in out.splitlines() if line.startswith("done")))
        weights = os.path.join(tmp, "run", "net.safetensors")
        print(run([args.coordinator, "export", "net.yaml", "--weights", weights, "--output", "trained.onnx"], tmp),
              end="")
        run([args.coordinator, "predict", "net.yaml", "--weights", weights, "--input",
             DATA + "t10k-images-idx3-ubyte.gz", "--output", "pred.csv", "--probabilities"], tmp)
        with open(os.path.join(tmp, "pred.csv")) as f:
            rows = list(csv.reader(f))[1:]
        dm_labels = np.array([int(r[1]) for r in rows])
        dm_probs = np.array([[float(v) for v in r[2:]] for r in rows])

        model = onnx.load(os.path.join(tmp, "trained.onnx"))
        onnx.checker.check_model(model)
        ops = [n.op_type for n in model.graph.node]
        for op in ("Conv", "BatchNormalization", "MaxPool", "Add", "GlobalAveragePool", "Gemm"):
            assert op in ops, f"the export has no {op}: {ops}"
        init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        for name in ("bn1.running_mean", "layer1.bn2.running_var"):
            assert name in init, sorted(init)
        assert not np.allclose(init["bn1.running_mean"], 0), "the running mean is still its initial value"
        with gzip.open(DATA + "t10k-images-idx3-ubyte.gz") as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
        with torch.no_grad():
            x = torch.from_numpy(images.astype(np.float32) / 255.0)
            probs = torch.softmax(run_onnx(model, x), dim=1).numpy()
        runs = [("the export run node by node", probs)]
        if args.onnxruntime:
            np.save(os.path.join(tmp, "images.npy"), x.numpy())
            run([args.onnxruntime, "-c", ORT_SCRIPT, os.path.join(tmp, "trained.onnx"), os.path.join(tmp, "images.npy"),
                 os.path.join(tmp, "ort.npy")], tmp)
            runs.append(("ONNX Runtime", np.load(os.path.join(tmp, "ort.npy"))))
        failed = False
        for name, p in runs:
            same = int((p.argmax(1) == dm_labels).sum())
            diff = np.abs(p - dm_probs).max()
            print(f"{name}: {len(p)} test images, labels equal devmap's on {same}, "
                  f"largest probability difference {diff:.2e}")
            failed = failed or same != len(p) or diff > args.atol
        if failed:
            sys.exit(f"the exported model's predictions differ from devmap's (atol {args.atol})")


if __name__ == "__main__":
    main()
