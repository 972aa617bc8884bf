"""Encrypted neural-network inference: a plaintext model on encrypted data
(seed 001, HE-Transformer style).

::

    model = rf.nn.load("net.onnx", ctx)                  # or activation="poly", calibration=x_train
    enc = ctx.encrypt_batch(x, keys)                     # x: NumPy, batch first (<= ctx.slots inputs)
    out = model(enc, client=rf.nn.LocalClient(ctx, sk, keys))
    logits = ctx.decrypt_batch(out, sk)                  # shaped like the plaintext model's output

Batch-axis packing: one ciphertext per tensor element, the batch in the slots.
Linear layers (Conv, Gemm/MatMul, pooling, folded BatchNorm) run as one
ciphertext linear combination per output element and one rescale (lazy
rescaling); ReLU/Clip/MaxPool run client-aided, or as fitted polynomials.
``model.plan()`` gives levels, ciphertext counts and memory before running.
"""

from .activations import Polynomial
from .client import Client, LocalClient
from .graph import Graph, UnsupportedOperator
from .model import Model, Plan, inter_period, load, suggest_parameters
from ..ckks.batch import EncryptedTensor, decrypt_batch, encrypt_batch

__all__ = ["load", "Model", "Plan", "Graph", "Client", "LocalClient", "EncryptedTensor", "Polynomial",
           "UnsupportedOperator", "encrypt_batch", "decrypt_batch", "suggest_parameters", "inter_period"]
