"""Writes the Keras fixtures of tests/onnx/keras_layout_test.cpp into OUT_DIR.

    bench/.venv/bin/python tests/onnx/data/keras/make_keras_fixtures.py OUT_DIR

Needs tensorflow-cpu and tf2onnx from PyPI (bench/keras_onnx_check.sh
installs both into bench/.venv). CI never runs this: it reads the files
this wrote once, committed in tests/onnx/data/keras/ (README.md there).
Each fixture is a tiny channels_last Keras CNN (Conv2D same-padded with
relu, MaxPooling2D, Flatten, Dense relu, Dense softmax; random weights and
biases from a fixed seed), exported as a SavedModel and converted by
tf2onnx's command line into OUT_DIR/NAME/model.onnx:

    keras_rgb        6x6x3 images, tf2onnx's default options (an NHWC input
                     and a Transpose to NCHW before the Conv, a Transpose
                     back to NHWC before the Flatten)
    keras_rgb_nchw   the same model with --inputs-as-nchw images (an NCHW
                     input; the Transpose before the Flatten stays)
    keras_gray       6x6x1 images, default options (tf2onnx writes the
                     input's change of layout as a Reshape)

and beside it input_0.pb (two NHWC images, a float32 TensorProto) and
output_0.pb (Keras's own predictions for them, model(x), float32).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "bench"))
from require import require  # noqa: E402

require("numpy", "tensorflow", "tf2onnx", "onnx")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


def tiny_cnn(channels, seed):
    keras.utils.set_random_seed(seed)
    init = keras.initializers.RandomNormal(stddev=0.5, seed=seed)
    bias = keras.initializers.RandomNormal(stddev=0.2, seed=seed + 1)
    return keras.Sequential([
        keras.Input((6, 6, channels), name="images"),
        keras.layers.Conv2D(4, 3, padding="same", activation="relu", kernel_initializer=init, bias_initializer=bias),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(5, activation="relu", kernel_initializer=init, bias_initializer=bias),
        keras.layers.Dense(3, activation="softmax", kernel_initializer=init, bias_initializer=bias),
    ])


def convert(model, path, extra):
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "saved")
        model.export(saved, format="tf_saved_model", verbose=False)
        subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", saved, "--output", path] + extra,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write_tensor(array, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_keras_fixtures.py OUT_DIR")
    out = sys.argv[1]
    for name, channels, extra in [("keras_rgb", 3, []), ("keras_rgb_nchw", 3, ["--inputs-as-nchw", "images"]),
                                  ("keras_gray", 1, [])]:
        model = tiny_cnn(channels, seed=7)
        x = np.random.default_rng(11).random((2, 6, 6, channels), dtype=np.float32)
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        convert(model, os.path.join(folder, "model.onnx"), extra)
        write_tensor(x, os.path.join(folder, "input_0.pb"))
        write_tensor(np.asarray(model(x), dtype=np.float32), os.path.join(folder, "output_0.pb"))
        m = onnx.load(os.path.join(folder, "model.onnx"))
        print(name, ": ", " ".join(n.op_type for n in m.graph.node), sep="")
    print(f"tensorflow {tf.__version__}, keras {keras.__version__}, tf2onnx "
          f"{__import__('tf2onnx').__version__}, onnx {onnx.__version__}")


if __name__ == "__main__":
    main()
