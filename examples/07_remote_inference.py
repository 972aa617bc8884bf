"""Tutorial 7: encrypted inference as a service.

A model owner serves a digits classifier with ``ringfire serve``; a client that holds the
secret key classifies images without the server ever seeing them. The script plays both
parties on this machine: it trains the network (the test suite's 64-32-10 MLP on
scikit-learn's digits), starts a real server on 127.0.0.1 in its own process with a token
for one tenant, and then, as the client, makes keys, uploads the evaluation keys, sends
encrypted images, answers the server's client-aided ReLU round and decrypts the scores.
It checks the predictions against onnxruntime on the same model and stops the server.

The three commands of a deployment, which this script runs for you:

    ringfire serve --add-token clinic --tokens tokens            # prints the tenant's token
    ringfire serve digits.onnx --tokens tokens --store store --preset N13_D2
    ringfire infer digits --server http://127.0.0.1:8000 --token TOKEN --input images.npy

Run: python examples/07_remote_inference.py
(needs ``pip install 'ringfire[serve]' scikit-learn onnxruntime``: the digits and the check)
"""

import importlib.util
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

missing = [name for name in ("sklearn", "onnxruntime") if importlib.util.find_spec(name) is None]
if missing:
    sys.exit(f"this example trains on scikit-learn's digits and checks against onnxruntime ({', '.join(missing)} "
             "missing): pip install scikit-learn onnxruntime")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import nn_models as M  # noqa: E402  (the test suite's digits network and its trainer)

import ringfire as rf  # noqa: E402

x_train, y_train, x_test, y_test = M.digits_split()
model_bytes = M.mlp_onnx(M.mlp_train(x_train, y_train))

with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    (tmp / "digits.onnx").write_bytes(model_bytes)
    # The model owner: a token for the clinic (only its hash is stored), then the server.
    token = subprocess.run([sys.executable, "-m", "ringfire", "serve", "--add-token", "clinic", "--tokens",
                            str(tmp / "tokens")], capture_output=True, text=True, check=True).stdout.strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "ringfire", "serve", str(tmp / "digits.onnx"), "--tokens",
                               str(tmp / "tokens"), "--store", str(tmp / "store"), "--preset", "N13_D2",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
    url = f"http://127.0.0.1:{port}"
    try:
        client = rf.serve.Client(url, token)
        for _ in range(300):  # the server loads the model: wait until it answers
            try:
                client.request("GET", "/v2/health/ready")
                break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.1)
        # The client: keys made here; only the evaluation keys travel (once per session). Closed at
        # the end of the block: the server deletes its results and keeps its keys for a next one.
        with client.session("digits", progress=False) as session:
            print(f"session {session.id[:8]}: model {client.models()}, keys {session.info['parameters']['keys']}")
            images = x_test[:32]
            start = time.perf_counter()
            scores = session.infer(images, progress=False)
            seconds = time.perf_counter() - start
        predicted = scores.argmax(1)
        reference = M.ort_run(model_bytes, images).argmax(1)
        print(f"{len(images)} encrypted images classified in {seconds:.2f} s with {session.rounds} client-aided "
              f"round(s); agreement with onnxruntime {np.mean(predicted == reference):.3f}, accuracy "
              f"{np.mean(predicted == y_test[:32]):.3f}")
        assert np.array_equal(predicted, reference)
        client.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
