#!/usr/bin/env python3
"""The reference CNN, the MLP or the ResNet in TensorFlow (tensorflow-cpu from
PyPI, in bench/.venv), for side-by-side numbers with devmap and PyTorch.

Training runs a tf.function step (Keras layers, tf.GradientTape, Keras'
default initialisation): the timed scope of a step is the batch gathered from
the training set already in memory, forward, backward and the weight update,
as bench/pytorch_train.py and bench/pytorch_resnet.py time it. cnn, mlp:
Keras SGD with momentum 0.9, lr 0.01, batch 64. resnet
(configs/fashion_mnist_resnet.yaml: Conv2D without bias, BatchNormalization
with PyTorch's momentum 0.1 and eps 1e-5, a 3x3 stride-2 convolution as
ZeroPadding2D(1) + a valid Conv2D, which pads as PyTorch's padding=1 does):
Keras SGD with momentum 0.9 and weight_decay 5e-4 (Keras decays the weights
apart from the gradient; the arithmetic per update is the same size), lr 0.1
under a CosineDecay with --warmup linear warm-up steps, batch 128.
Prediction loads devmap's weights (safetensors, PyTorch layouts) into the
same model in TensorFlow's NHWC layout (convolutions OIHW -> HWIO, dense
layers transposed, the CNN's first dense layer's rows permuted to NHWC
flattening; the ResNet's batch_norm scale, shift and running statistics by
op name) and times a tf.function from the 10000 test images in memory to
labels, batch by batch.

  tensorflow_bench.py train [--model cnn|mlp|resnet] [--threads N] [--steps N] [--warmup W]
      prints "tensorflow <version> ... median_images/s=<x>"
  tensorflow_bench.py predict WEIGHTS [--model cnn|resnet] [--threads N] [--batch B] [--labels FILE]
      prints "tensorflow <version> images/s=<x> seconds=<s> labels_crc=<c>";
      --labels writes the labels, one per line
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import time
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from require import require  # noqa: E402

require("numpy")
import numpy as np  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def load(kind):
    with gzip.open(f"{DATA}/{kind}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1).astype(np.float32) / 255
    with gzip.open(f"{DATA}/{kind}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return x, y


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        dtype = {"F32": "<f4", "I64": "<i8"}[meta["dtype"]]  # I64: batch_norm's num_batches_tracked
        out[name] = np.frombuffer(data[begin:end], dtype).reshape(meta["shape"])
    return out


RESNET_STAGES = [(1, 16, 1), (2, 32, 2), (3, 64, 2)]  # stage, channels, first stride


def resnet(tf):
    """configs/fashion_mnist_resnet.yaml in Keras (NHWC), each layer named after devmap's op."""
    L = tf.keras.layers

    def conv(x, name, filters, kernel, stride=1):
        if kernel == 3 and stride == 2:  # PyTorch's padding=1; "same" would pad only bottom and right
            x = L.ZeroPadding2D(1, name=name + "_pad")(x)
            return L.Conv2D(filters, 3, strides=2, padding="valid", use_bias=False, name=name)(x)
        pad = "same" if kernel == 3 else "valid"
        return L.Conv2D(filters, kernel, strides=stride, padding=pad, use_bias=False, name=name)(x)

    def bn(x, name):
        return L.BatchNormalization(momentum=0.9, epsilon=1e-5, name=name)(x)

    image = tf.keras.Input((28, 28, 1))
    x = L.ReLU()(bn(conv(image, "conv1", 16, 3), "bn1"))
    for stage, channels, stride in RESNET_STAGES:
        for b in (1, 2):
            p, s = f"l{stage}b{b}_", stride if b == 1 else 1
            y = L.ReLU()(bn(conv(x, p + "conv1", channels, 3, s), p + "bn1"))
            y = bn(conv(y, p + "conv2", channels, 3), p + "bn2")
            if s != 1 or x.shape[-1] != channels:
                x = bn(conv(x, p + "down", channels, 1, s), p + "downbn")
            x = L.ReLU()(L.Add()([y, x]))
    x = L.GlobalAveragePooling2D()(x)
    return tf.keras.Model(image, L.Dense(10, name="fc")(x))


def load_resnet_weights(net, w):
    """devmap's ResNet weights (PyTorch layouts) into resnet()'s layers, by op name."""
    for layer in net.layers:
        n = layer.name
        if f"{n}.running_mean" in w:
            layer.set_weights([w[f"{n}.weight"], w[f"{n}.bias"], w[f"{n}.running_mean"], w[f"{n}.running_var"]])
        elif n == "fc":
            layer.set_weights([w["fc.weight"].T, w["fc.bias"]])
        elif f"{n}.weight" in w:
            layer.set_weights([w[f"{n}.weight"].transpose(2, 3, 1, 0)])


def model(tf, kind):
    if kind == "resnet":
        return resnet(tf)
    L = tf.keras.layers
    if kind == "mlp":
        layers = [L.Flatten(), L.Dense(256, activation="relu"), L.Dense(10)]
    else:
        layers = [L.Conv2D(32, 5, padding="same", activation="relu"), L.MaxPool2D(2),
                  L.Conv2D(64, 5, padding="same", activation="relu"), L.MaxPool2D(2),
                  L.Flatten(), L.Dense(1024, activation="relu"), L.Dense(10)]
    net = tf.keras.Sequential([tf.keras.Input((28, 28, 1))] + layers)
    return net


def set_threads(tf, n):
    tf.config.threading.set_intra_op_parallelism_threads(n)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def train(tf, a):
    tf.keras.utils.set_random_seed(a.seed)
    x, y = load("train")
    xtr, ytr = tf.constant(x), tf.constant(y)
    net = model(tf, a.model)
    if a.model == "resnet":
        lr = tf.keras.optimizers.schedules.CosineDecay(0.1 / 3, a.steps - a.warmup, alpha=0.0,
                                                       warmup_target=0.1, warmup_steps=a.warmup)
        opt = tf.keras.optimizers.SGD(learning_rate=lr, momentum=0.9, weight_decay=5e-4)
    else:
        opt = tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(idx):
        xb, yb = tf.gather(xtr, idx), tf.gather(ytr, idx)
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, net(xb, training=True))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
        return loss

    rng = np.random.default_rng(a.seed)
    perm = rng.permutation(len(x))
    times = []
    for s in range(a.steps):
        i = (s * a.batch) % (len(x) - a.batch)
        idx = tf.constant(perm[i:i + a.batch])
        t0 = time.perf_counter()
        step(idx).numpy()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times[5:] or times)
    print(f"tensorflow {tf.__version__} {a.model} threads={a.threads} steps={a.steps} "
          f"median_step_ms={med * 1e3:.2f} median_images/s={a.batch / med:.0f}")


def predict(tf, a):
    w = read_safetensors(a.weights)
    net = model(tf, a.model)
    if a.model == "resnet":
        load_resnet_weights(net, w)
    else:
        # conv: OIHW -> HWIO; fc1 rows: devmap flattens (C, H, W), Keras (H, W, C).
        fc1 = w["fc1.weight"].reshape(1024, 64, 7, 7).transpose(2, 3, 1, 0).reshape(3136, 1024)
        net.set_weights([w["conv1.weight"].transpose(2, 3, 1, 0), w["conv1.bias"],
                         w["conv2.weight"].transpose(2, 3, 1, 0), w["conv2.bias"],
                         fc1, w["fc1.bias"], w["logits.weight"].T, w["logits.bias"]])
    x, _ = load("t10k")
    f = tf.function(lambda b: tf.argmax(net(b, training=False), axis=1))
    f(tf.constant(x[:a.batch])).numpy()  # traces the function outside the timed loop
    labels = []
    t0 = time.perf_counter()
    for i in range(0, len(x), a.batch):
        labels.append(f(tf.constant(x[i:i + a.batch])).numpy())
    secs = time.perf_counter() - t0
    labels = np.concatenate(labels).astype(np.int64)
    if a.labels:
        np.savetxt(a.labels, labels, fmt="%d")
    crc = zlib.crc32(labels.tobytes())
    print(f"tensorflow {tf.__version__} images/s={len(x) / secs:.1f} seconds={secs:.3f} labels_crc={crc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["train", "predict"])
    ap.add_argument("weights", nargs="?", help="(predict) devmap safetensors weights")
    ap.add_argument("--model", choices=["cnn", "mlp", "resnet"], default="cnn")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=5, help="(train resnet) linear warm-up steps")
    ap.add_argument("--batch", type=int, default=None, help="64 for train (resnet: 128), 1000 for predict")
    ap.add_argument("--labels", help="(predict) write the labels here, one per line")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    require("tensorflow")
    import tensorflow as tf

    set_threads(tf, a.threads)
    if a.mode == "train":
        a.batch = a.batch or (128 if a.model == "resnet" else 64)
        train(tf, a)
    else:
        if not a.weights:
            ap.error("predict needs WEIGHTS")
        if a.model == "mlp":
            ap.error("predict runs --model cnn or resnet")
        a.batch = a.batch or 1000
        predict(tf, a)


if __name__ == "__main__":
    main()
