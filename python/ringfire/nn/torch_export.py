"""A ``torch.nn.Module`` to ONNX bytes, for ``rf.nn.load(module, example_input=...)``.

PyTorch ships two ONNX exporters. The TorchScript one (``dynamo=False``) needs
nothing beyond torch and emits the operators ringfire's graph reader was built
on (Gemm, Flatten, Conv with explicit pads); torch deprecates it and may drop
it. The ``torch.export`` one (torch's default since 2.9) needs the
``onnxscript`` package. ``exporter="auto"`` tries the first and falls back to
the second, so a torch without the legacy exporter still works, and a missing
``onnxscript`` is reported with the extra that installs it
(``pip install 'ringfire[torch]'``).
"""

from __future__ import annotations

import io
import logging
import sys
import warnings

import numpy as np

EXPORTERS = ("auto", "torchscript", "dynamo")


def is_torch_module(obj) -> bool:
    """True for a ``torch.nn.Module`` (without importing torch when nobody has)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def export(module, example_input, exporter: str = "auto", batch_axis: int = 0) -> bytes:
    """The module as ONNX bytes with a dynamic batch axis named ``x`` -> ``y``. A module whose
    batch is not its inputs' first axis (``batch_axis=1``: torch's transformer layers with
    ``batch_first=False``, inputs (sequence, batch, features)) is exported wrapped in moves of
    that axis to the front and back: the loaded model takes and gives batch-first tensors."""
    import torch

    if exporter not in EXPORTERS:
        raise ValueError(f"[nn.load] exporter must be one of {EXPORTERS}, got {exporter!r}")
    if isinstance(batch_axis, bool) or not isinstance(batch_axis, int) or batch_axis < 0:
        raise ValueError(f"[nn.load] batch_axis is the example input's batch axis, an integer >= 0, got {batch_axis!r}")
    if example_input is None:
        raise ValueError("[nn.load] exporting a torch module needs example_input= (one batch-first input, "
                         "e.g. torch.zeros(1, 3, 32, 32))")
    if module.training:
        raise ValueError(f"[nn.load] {type(module).__name__} is in training mode (Dropout would drop values and "
                         "BatchNorm use batch statistics): call module.eval() before loading it")
    example = _as_float_tensor(torch, example_input)
    if example.ndim < 2:
        raise ValueError(f"[nn.load] example_input must be batch-first (batch, features...), got shape "
                         f"{tuple(example.shape)}: add a batch axis, e.g. x[None]")
    if batch_axis:
        if batch_axis >= example.ndim:
            raise ValueError(f"[nn.load] batch_axis={batch_axis} is not an axis of example_input "
                             f"(shape {tuple(example.shape)})")
        module, example = _BatchMoved.wrap(torch, module, batch_axis), example.movedim(batch_axis, 0)

    _check_samples_independent(torch, module, example)
    order = ("torchscript", "dynamo") if exporter == "auto" else (exporter,)
    failures = []
    for name in order:
        try:
            return _EXPORT[name](torch, module, example)
        except ImportError as error:
            failures.append(f"{name} exporter: {error} (pip install 'ringfire[torch]' installs onnxscript)")
        except Exception as error:  # torch raises many types; all mean "this exporter failed"
            failures.append(f"{name} exporter: {type(error).__name__}: {error}")
    raise ValueError("[nn.load] torch.onnx could not export the module; " + "; ".join(failures))


def _first_tensor(out):
    """A module's output, or the first tensor of a tuple of them (MultiheadAttention's)."""
    while isinstance(out, (tuple, list)) and out:
        out = out[0]
    return out


def _check_samples_independent(torch, module, example) -> None:
    """ringfire runs a model on each sample along the first axis on its own. A module that mixes
    values across that axis (a sequence-first layer, ``batch_first=False``, whose first axis is
    the sequence) would run silently wrong: run torch on a batch of two different inputs and on
    each alone, and refuse when they disagree."""
    try:
        pair = torch.cat([example[:1], example[:1] * 0.5 + 0.25]) if example.shape[0] == 1 else example[:2]
        with torch.no_grad():
            together = _first_tensor(module(pair))
            alone = torch.cat([_first_tensor(module(pair[i:i + 1])) for i in range(pair.shape[0])])
        if not isinstance(together, torch.Tensor) or together.shape != alone.shape:
            return
        scale = float(together.abs().max()) or 1.0
        mixed = float((together - alone).abs().max()) > 1e-4 * scale + 1e-6
    except Exception:  # noqa: BLE001 - a module that takes one shape only: the exporter will tell
        return
    if mixed:
        raise ValueError(f"[nn.load] {type(module).__name__} mixes values across the first axis of its input "
                         f"(shape {tuple(example.shape)}): torch's outputs for two inputs run together differ from "
                         "each run alone, so that axis is not a batch. ringfire runs each sample along the first "
                         "axis on its own: put the batch first (batch_first=True for torch's transformer layers), "
                         "or pass batch_axis=1 for a sequence-first module: the loaded model then takes "
                         "(batch, sequence, features))")


class _BatchMoved:
    """A module called with its batch axis moved to the front, its (first) output's moved back."""

    @staticmethod
    def wrap(torch, module, axis: int):
        class BatchFirst(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = module

            def forward(self, x):
                return _first_tensor(self.inner(x.movedim(0, axis))).movedim(axis, 0)

        wrapped = BatchFirst().eval()
        wrapped.__class__.__name__ = f"{type(module).__name__}(batch_axis={axis})"
        return wrapped


def _as_float_tensor(torch, value):
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float32)
    return torch.as_tensor(np.asarray(value, dtype=np.float32))


def _torchscript(torch, module, example) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # Chosen on purpose (see the module docstring); torch's deprecation notice is noise here.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", message="Constant folding", category=UserWarning)  # torch's own notes
        # "the trace might not generalize": shape checks traced as constants, which is what a
        # static shape per sample means here.
        tracer_warning = getattr(getattr(torch, "jit", None), "TracerWarning", None)
        if tracer_warning is not None:
            warnings.filterwarnings("ignore", category=tracer_warning)
        kwargs = {"dynamo": False} if "dynamo" in _export_parameters(torch) else {}
        torch.onnx.export(module, (example,), buffer, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, **kwargs)
    return buffer.getvalue()


def _dynamo(torch, module, example) -> bytes:
    import onnxscript  # noqa: F401  (torch imports it lazily; name it here first)

    batch = torch.export.Dim.DYNAMIC if hasattr(torch.export.Dim, "DYNAMIC") else torch.export.Dim("batch")
    torch_onnx_log = logging.getLogger("torch.onnx")
    level = torch_onnx_log.level
    torch_onnx_log.setLevel(logging.ERROR)  # its notes on operators of packages we do not use
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            program = torch.onnx.export(module, (example,), None, input_names=["x"], output_names=["y"],
                                        dynamic_shapes=({0: batch},), dynamo=True, verbose=False)
    finally:
        torch_onnx_log.setLevel(level)
    return program.model_proto.SerializeToString()


def _export_parameters(torch) -> set[str]:
    import inspect

    return set(inspect.signature(torch.onnx.export).parameters)


_EXPORT = {"torchscript": _torchscript, "dynamo": _dynamo}
