"""The memory guard (ringfire.memory_guard): runs predicted above what the process can get
spill to disk or are refused before anything large is allocated -- never killed. Real
limits in subprocesses (RLIMIT_AS: address space, which spill files count against too),
and the spill path under a smaller reported availability."""

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ringfire as rf
from ringfire import memory_guard

SEED = bytes(range(32))


def quiet_context(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rf.ckks.Context(insecure_deterministic_seed=SEED, **kwargs)


def under_address_limit(body: str, headroom_mib: int, tmp_path) -> dict:
    """Runs `body` in a subprocess after `setup`, with RLIMIT_AS set `headroom_mib` above the
    address space in use; `body` prints one JSON line."""
    script = textwrap.dedent("""
        import json, resource, sys, time, warnings
        warnings.simplefilter("ignore")
        sys.path.insert(0, {tests!r})
        import numpy as np
        import ringfire as rf
        from nn_models import mlp_bytes

        def limit(headroom_mib):
            with open("/proc/self/status") as f:
                used = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
            resource.setrlimit(resource.RLIMIT_AS, (used + headroom_mib * 2**20, resource.RLIM_INFINITY))
        """).format(tests=str(__import__("pathlib").Path(__file__).parent)) + textwrap.dedent(body)
    path = tmp_path / "run.py"
    path.write_text(script.replace("HEADROOM", str(headroom_mib)))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_model_larger_than_the_address_space_left_is_refused_not_killed(tmp_path):
    pytest.importorskip("onnx")
    out = under_address_limit("""
        ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[60, 40, 40, 60], scale_bits=40)
        sk, keys = ctx.keygen()
        model = rf.nn.load(mlp_bytes((64, 64, 10)), ctx)
        enc = ctx.encrypt_batch(np.random.default_rng(0).uniform(-1, 1, (8, 64)), keys)
        needed = model.plan().peak_bytes - model.plan().key_bytes
        limit(HEADROOM)
        start = time.perf_counter()
        try:
            model(enc, client=rf.nn.LocalClient(ctx, sk, keys))
            print(json.dumps({"refused": False}))
        except MemoryError as e:
            print(json.dumps({"refused": True, "seconds": time.perf_counter() - start, "message": str(e),
                              "needed_mib": needed / 2**20, "value_error": isinstance(e, ValueError)}))
        """, 48, tmp_path)
    assert out["refused"] and out["needed_mib"] > 48
    assert out["seconds"] < 1.0 and out["value_error"]
    assert "is predicted to need" in out["message"] and "address-space limit" in out["message"]
    assert "rf.memory.spill" in out["message"] and "memory_check=False" in out["message"]


def test_ringfire_infer_under_the_limit_exits_with_the_error(tmp_path):
    pytest.importorskip("onnx")
    out = under_address_limit(f"""
        from ringfire import cli
        import contextlib, io
        (open({str(tmp_path / 'm.onnx')!r}, "wb")).write(mlp_bytes((64, 64, 10)))
        np.save({str(tmp_path / 'x.npy')!r}, np.zeros((8, 64)))
        limit(HEADROOM)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(["infer", {str(tmp_path / 'm.onnx')!r}, "--input", {str(tmp_path / 'x.npy')!r}])
        print(json.dumps({{"code": code, "stderr": err.getvalue()}}))
        """, 48, tmp_path)
    assert out["code"] == 2 and "ringfire infer is predicted to need" in out["stderr"]


def test_bootstrapping_keys_that_do_not_fit_are_refused_before_they_are_made(tmp_path):
    out = under_address_limit("""
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE")
        plan = ctx.bootstrap_plan()  # the precomputation first: its diagonals exist before the limit
        limit(HEADROOM)
        try:
            ctx.keygen(bootstrap=True)
            print(json.dumps({"refused": False}))
        except MemoryError as e:
            print(json.dumps({"refused": True, "message": str(e), "key_mib": plan.key_bytes / 2**20}))
        """, 32, tmp_path)
    assert out["refused"] and out["key_mib"] > 32
    assert "bootstrapping key generation is predicted to need" in out["message"]


@pytest.fixture
def mlp():
    pytest.importorskip("onnx")
    from nn_models import mlp_bytes
    return mlp_bytes((16, 8, 4))


def _run(mlp_bytes, x, **call):
    ctx = quiet_context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen()
    model = rf.nn.load(mlp_bytes, ctx)
    out = model(ctx.encrypt_batch(x, keys), client=rf.nn.LocalClient(ctx, sk, keys), **call)
    return [c.to_bytes() for c in out.cts.flat]


def test_a_run_that_does_not_fit_spills_and_gives_the_same_result(mlp, monkeypatch, tmp_path):
    x = np.random.default_rng(1).uniform(-1, 1, (4, 16))
    in_ram = _run(mlp, x)
    small = {"bytes": 4096, "mem_available": 4096, "cgroup_room": None, "address_space_room": None,
             "spill_helps": True}
    monkeypatch.setattr(memory_guard, "available_bytes", lambda: small)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(memory_guard.tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    seen = []  # the pool's spill state while the layers run
    with pytest.warns(RuntimeWarning, match=rf"go to unlinked files in {tmp_path}"):
        spilled = _run(mlp, x, progress=lambda done, total, layer: seen.append(rf.memory.stats()))
    assert spilled == in_ram
    assert seen and all(s["active"] and s["directory"] == str(tmp_path) for s in seen)
    assert max(s["bytes_spilled"] for s in seen) > 0
    assert not rf.memory.stats()["active"]


def test_opting_out_warns(mlp, monkeypatch):
    monkeypatch.setattr(memory_guard, "available_bytes", lambda: pytest.fail("the opt-out must not ask"))
    with pytest.warns(RuntimeWarning, match="memory_check=False"):
        _run(mlp, np.zeros((2, 16)), memory_check=False)


def test_what_is_available_is_read_from_the_system():
    room = memory_guard.available_bytes()
    assert 0 < room["bytes"] <= room["mem_available"]
    assert room["spill_helps"] == (room["address_space_room"] is None)
    json.dumps(room)
