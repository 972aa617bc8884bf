"""``ringfire infer --server URL --keys DIR``: a command-line client's keys made once and kept,
so that later runs load them and the server links its stored copy instead of receiving them
again; the secret key readable by its user alone, sealed where a password is set."""

import json
import os
import stat

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("onnx")

from ringfire import cli  # noqa: E402
from ringfire.serve import ServeConfig  # noqa: E402
from nn_models import mlp_bytes, ort_run  # noqa: E402
from serve_support import batch, server_thread, tokens_file  # noqa: E402


def run(capsys, *args) -> dict:
    assert cli.main(["infer", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_kept_keys_are_made_once_then_linked_by_the_server(tmp_path, capsys, monkeypatch):
    model = tmp_path / "mlp.onnx"
    model.write_bytes(mlp_bytes((16, 8, 4)))
    tokens = tokens_file(tmp_path / "tokens")
    config = ServeConfig(model=str(model), store=str(tmp_path / "store"), tokens=str(tmp_path / "tokens"),
                         preset="N13_D2", requests_per_second=400)
    x = batch(3, 16, seed=4)
    np.save(tmp_path / "x.npy", x)
    ref = ort_run(model.read_bytes(), x)
    monkeypatch.delenv("RINGFIRE_KEY_PASSWORD", raising=False)
    with server_thread(config) as (url, app):
        common = [str(model), "--input", str(tmp_path / "x.npy"), "--server", url, "--token", tokens["alice"]]
        first = run(capsys, *common, "--keys", str(tmp_path / "keys"))
        assert first["keys"] == "made" and first["sent"] == {"relin": "uploaded"}
        sent = app.state.metrics.uploaded._value.get()
        second = run(capsys, *common, "--keys", str(tmp_path / "keys"))
        assert second["keys"] == "loaded" and second["sent"] == {"relin": "linked"}
        assert app.state.metrics.uploaded._value.get() == sent  # nothing sent again
        for report in (first, second):
            assert np.max(np.abs(np.array(report["outputs"]) - ref)) < 1e-3
        (folder,) = (tmp_path / "keys").iterdir()
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(folder / "secret.key").st_mode) == 0o600
        assert sorted(p.name for p in folder.iterdir()) == ["evaluation.keys", "secret.key"]
        # Sealed with a password: the next run without it is told what is missing.
        monkeypatch.setenv("RINGFIRE_KEY_PASSWORD", "correct horse")
        sealed = run(capsys, *common, "--keys", str(tmp_path / "sealed"))
        assert sealed["keys"] == "made"
        assert run(capsys, *common, "--keys", str(tmp_path / "sealed"))["keys"] == "loaded"
        monkeypatch.delenv("RINGFIRE_KEY_PASSWORD")
        assert cli.main(["infer", *common, "--keys", str(tmp_path / "sealed")]) != 0
        assert "is sealed: set $RINGFIRE_KEY_PASSWORD" in capsys.readouterr().err
        monkeypatch.setenv("RINGFIRE_KEY_PASSWORD", "wrong")
        assert cli.main(["infer", *common, "--keys", str(tmp_path / "sealed")]) != 0
        assert "a wrong $RINGFIRE_KEY_PASSWORD" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="goes with --server"):
        cli.main(["infer", str(model), "--input", str(tmp_path / "x.npy"), "--keys", str(tmp_path / "keys")])


def test_the_command_line_fits_the_batch_to_the_input_shape_the_server_describes(tmp_path, capsys):
    """With the model named (its ONNX file not here), flat rows of the right size are reshaped
    to the input shape the server describes, an NHWC batch transposed with --layout nhwc, and
    anything else refused with both shapes before a key is made."""
    from onnx import helper
    from nn_models import make_model
    rng = np.random.default_rng(2)
    onnx_bytes = make_model([helper.make_node("Flatten", ["x"], ["f"]), helper.make_node("Gemm", ["f", "W", "B"], ["y"])],
                            (2, 2, 3), {"W": rng.normal(0, 0.4, (12, 4)), "B": rng.normal(0, 0.1, 4)})
    (tmp_path / "img.onnx").write_bytes(onnx_bytes)
    tokens = tokens_file(tmp_path / "tokens")
    config = ServeConfig(model=str(tmp_path / "img.onnx"), store=str(tmp_path / "store"),
                         tokens=str(tmp_path / "tokens"), preset="N13_D2", requests_per_second=400)
    x = rng.uniform(-1, 1, (3, 2, 2, 3))
    ref = ort_run(onnx_bytes, x)
    with server_thread(config) as (url, app):
        common = ["img", "--server", url, "--token", tokens["alice"]]
        for given, extra in [(x.reshape(3, 12), []), (x.transpose(0, 2, 3, 1), ["--layout", "nhwc"])]:
            np.save(tmp_path / "x.npy", given)
            report = run(capsys, "--input", str(tmp_path / "x.npy"), *common, *extra)
            assert np.max(np.abs(np.array(report["outputs"]) - ref)) < 1e-3
        np.save(tmp_path / "x.npy", x.reshape(3, 2, 6))
        assert cli.main(["infer", "--input", str(tmp_path / "x.npy"), *common]) != 0
        assert "takes inputs of shape (2, 2, 3)" in capsys.readouterr().err


def test_kept_keys_are_per_set_of_keys_a_model_needs(tmp_path, capsys, monkeypatch):
    """Two models served with the same parameters, one needing Galois keys (inter packing) and
    one none: each gets a folder of its own in the same --keys directory (the parameters'
    fingerprint and what the keys cover), so the second is never handed keys that lack its
    rotations; a third server of the first kind shares the first one's keys."""
    monkeypatch.delenv("RINGFIRE_KEY_PASSWORD", raising=False)
    model = tmp_path / "mlp.onnx"
    model.write_bytes(mlp_bytes((16, 8, 4)))
    tokens = tokens_file(tmp_path / "tokens")
    x = batch(2, 16, seed=5)
    np.save(tmp_path / "x.npy", x)
    ref = ort_run(model.read_bytes(), x)
    seen = []
    for packing, store in [("batch", "a"), ("inter", "b"), ("batch", "c")]:
        config = ServeConfig(model=str(model), store=str(tmp_path / store), tokens=str(tmp_path / "tokens"),
                             preset="N14_D6", packing=packing, requests_per_second=400)
        with server_thread(config) as (url, _):
            report = run(capsys, str(model), "--input", str(tmp_path / "x.npy"), "--server", url,
                         "--token", tokens["alice"], "--keys", str(tmp_path / "keys"))
        assert np.max(np.abs(np.array(report["outputs"]) - ref)) < 1e-3, packing
        seen.append((report["keys"], sorted(report["sent"])))
    assert seen == [("made", ["relin"]), ("made", ["galois", "relin"]), ("loaded", ["relin"])]
    assert len(list((tmp_path / "keys").iterdir())) == 2
