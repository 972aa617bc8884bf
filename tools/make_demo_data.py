#!/usr/bin/env python3
"""Makes python/ringfire/data/digits_demo.npz, what `ringfire demo` classifies: a small CNN
(Conv 1->4 3x3, ReLU, 2x2 average pooling, dense 64->10) trained on scikit-learn's bundled 8x8
digits by the test suite's NumPy trainer, and 64 held-out test images with their labels.

The images come from the UCI "Optical Recognition of Handwritten Digits" data set (Alpaydin and
Kaynak, 1998; CC BY 4.0) as scikit-learn ships it; they are stored as its 0..16 gray levels.

    python tools/make_demo_data.py      # needs scikit-learn (the test extra)
"""

import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import nn_models as M  # noqa: E402


def main() -> None:
    x_train, y_train, x_test, y_test = M.digits_split(seed=0)
    params = M.cnn_train(x_train, y_train, epochs=40, seed=0)
    accuracy = M.accuracy(M.cnn_forward(params, x_test), y_test)
    images = np.rint(x_test[:64, 0] * 16).astype(np.uint8)
    out = ROOT / "python" / "ringfire" / "data" / "digits_demo.npz"
    np.savez_compressed(out, images=images, labels=y_test[:64].astype(np.uint8),
                        **{k: v.astype(np.float32) for k, v in params.items()})
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes; test accuracy {accuracy:.3f} on 360 images")


if __name__ == "__main__":
    main()
