#!/usr/bin/python3
"""Prediction of the 10000 Fashion-MNIST test images with devmap's weights, in
PyTorch or ONNX Runtime, for side-by-side numbers with `coordinator predict`.

The devmap checkpoint (safetensors, PyTorch layouts, devmap's op names) loads
with load_state_dict(strict=True) into the reference CNN (--model cnn,
tests/python/torch_equivalence.py) or the ResNet of
configs/fashion_mnist_resnet.yaml (--model resnet,
tests/python/torch_equivalence_resnet.py; eval mode: running statistics).

  pytorch_predict.py torch WEIGHTS [--model cnn|resnet] [--threads N] [--batch B] [--labels FILE] [--compile]
                                                                images/s of PyTorch (--compile: through
                                                                torch.compile, compiled on one batch first)
  pytorch_predict.py export WEIGHTS ONNX_FILE [--model cnn|resnet]
                                                                writes an ONNX export of the model
  pytorch_predict.py ort ONNX_FILE [--threads N] [--batch B] [--labels FILE]
                                                                images/s of ONNX Runtime

Prints one line: "<runtime> <version> images/s=<x> seconds=<s> labels_crc=<c>"
(the time of the prediction loop over the whole set, data already in memory);
--labels writes the labels, one per line.
"""
import argparse
import gzip
import time
import zlib

from require import require

require("numpy")
import numpy as np  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def test_images():
    with gzip.open(f"{DATA}/t10k-images-idx3-ubyte.gz") as f:
        return np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255


def torch_model(weights, model):
    """tests/python's PyTorch model of `model` (cnn, resnet) with devmap's weights, in eval mode."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
    from torch_equivalence import ReferenceCnn, read_safetensors

    if model == "resnet":
        from torch_equivalence_resnet import ResNet
        net = ResNet()
    else:
        net = ReferenceCnn()
    net.load_state_dict(read_safetensors(weights), strict=True)
    return net.eval()


def timed(predict, x, batch, labels_path):
    labels = []
    t0 = time.perf_counter()
    for i in range(0, len(x), batch):
        labels.append(predict(x[i:i + batch]))
    secs = time.perf_counter() - t0
    labels = np.concatenate(labels).astype(np.int64)
    if labels_path:
        np.savetxt(labels_path, labels, fmt="%d")
    return secs, zlib.crc32(labels.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["torch", "export", "ort"])
    ap.add_argument("model", help="devmap safetensors weights (torch, export) or an ONNX file (ort)")
    ap.add_argument("onnx", nargs="?", help="(export) where to write the ONNX file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--model", dest="model_kind", choices=["cnn", "resnet"], default="cnn",
                    help="(torch, export) the model")
    ap.add_argument("--labels", help="(torch, ort) write the labels here, one per line")
    ap.add_argument("--compile", action="store_true", help="(torch) run the model through torch.compile")
    a = ap.parse_args()
    if a.mode == "export":
        require("torch")
        import torch
        torch.onnx.export(torch_model(a.model, a.model_kind), torch.zeros(1, 1, 28, 28), a.onnx, input_names=["image"],
                          output_names=["logits"], dynamic_axes={"image": {0: "n"}, "logits": {0: "n"}})
        return
    x = test_images()
    if a.mode == "torch":
        require("torch")
        import torch
        torch.set_num_threads(a.threads)
        net = torch_model(a.model, a.model_kind)
        run = torch.compile(net) if a.compile else net
        with torch.no_grad():
            if a.compile:  # compiled outside the timing, for the batch size the loop runs
                run(torch.from_numpy(x[:a.batch]))
            secs, crc = timed(lambda b: run(torch.from_numpy(b)).argmax(1).numpy(), x, a.batch, a.labels)
        name, version = ("torch.compile" if a.compile else "pytorch"), torch.__version__
    else:
        require("onnxruntime")
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        secs, crc = timed(lambda b: sess.run(None, {"image": b})[0].argmax(1), x, a.batch, a.labels)
        name, version = "onnxruntime", ort.__version__
    print(f"{name} {version} images/s={len(x) / secs:.1f} seconds={secs:.3f} labels_crc={crc}")


if __name__ == "__main__":
    main()
