"""A Keras model through tf2onnx and devmap import, against Keras's own predictions.

    bench/.venv/bin/python bench/keras_onnx_check.py COORDINATOR WORK_DIR [--steps 300] [--batch 64]

Builds a channels_last Keras CNN for 28x28x1 Fashion-MNIST (Conv2D, MaxPooling2D,
Conv2D, Flatten, Dense relu, Dense softmax), trains it for --steps steps of --batch
images (Adam), exports it as a SavedModel and converts it with tf2onnx's command
line twice: with its default options (NHWC: the layout pass of devmap import folds
its transposes) and with --inputs-as-nchw. Each ONNX file goes through
`COORDINATOR import` and `COORDINATOR predict --probabilities` on the 10000 test
images; the labels must equal Keras's own (model.predict) on every image. Prints
the versions, then per conversion the labels equal (N/10000) and the largest
probability difference (devmap writes 6 significant digits). Everything goes
into WORK_DIR. Exit 1 when a label differs.
"""
import argparse
import csv
import gzip
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from require import require  # noqa: E402

require("numpy", "tensorflow", "tf2onnx", "onnx")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf2onnx  # noqa: E402
import keras  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist/"


def idx(name, offset, shape):
    with gzip.open(DATA + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset).reshape(shape)


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("coordinator")
    p.add_argument("work_dir")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    print(f"tensorflow {tf.__version__}, keras {keras.__version__}, tf2onnx {tf2onnx.__version__}, "
          f"onnx {onnx.__version__} ({sys.prefix})")

    n = args.steps * args.batch
    x_train = idx("train-images-idx3-ubyte.gz", 16, (-1, 28, 28, 1))[:n].astype(np.float32) / 255.0
    y_train = idx("train-labels-idx1-ubyte.gz", 8, (-1,))[:n].astype(np.int64)
    x_test = idx("t10k-images-idx3-ubyte.gz", 16, (-1, 28, 28, 1)).astype(np.float32) / 255.0
    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input((28, 28, 1), name="images"),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    hist = model.fit(x_train, y_train, batch_size=args.batch, epochs=1, verbose=0)
    print(f"keras: trained {len(x_train) // args.batch} steps of {args.batch} images, "
          f"training accuracy {hist.history['accuracy'][-1]:.4f}")
    keras_probs = model.predict(x_test, batch_size=1000, verbose=0)
    keras_labels = keras_probs.argmax(1)
    saved = os.path.join(work, "saved_model")
    model.export(saved, format="tf_saved_model", verbose=False)

    failed = False
    for name, extra in [("default options (NHWC)", []), ("--inputs-as-nchw images", ["--inputs-as-nchw", "images"])]:
        stem = "keras_nchw" if extra else "keras"
        onnx_file = os.path.join(work, stem + ".onnx")
        run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", saved, "--output", onnx_file] + extra, work)
        m = onnx.load(onnx_file)
        opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        print(f"tf2onnx, {name}: opset {opset}, {len(m.graph.node)} nodes: "
              + " ".join(nd.op_type for nd in m.graph.node))
        out = run([args.coordinator, "import", onnx_file, "--output", os.path.join(work, stem + ".yaml")], work)
        print("".join("  " + line + "\n" for line in out.splitlines() if line.startswith(("imported", "layout"))),
              end="")
        run([args.coordinator, "predict", stem + ".yaml", "--weights", stem + ".safetensors", "--input",
             DATA + "t10k-images-idx3-ubyte.gz", "--output", stem + "_pred.csv", "--probabilities"], work)
        with open(os.path.join(work, stem + "_pred.csv")) as f:
            rows = list(csv.reader(f))[1:]
        labels = np.array([int(r[1]) for r in rows])
        probs = np.array([[float(v) for v in r[2:]] for r in rows])
        same = int((labels == keras_labels).sum())
        diff = float(np.abs(probs - keras_probs).max())
        print(f"  devmap predict: labels equal Keras's on {same}/{len(keras_labels)} test images, "
              f"largest probability difference {diff:.2e}")
        failed = failed or same != len(keras_labels)
    if failed:
        sys.exit("devmap's labels differ from Keras's")


if __name__ == "__main__":
    main()
