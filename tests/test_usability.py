"""What a new user trips over in the first hour, each reproduced as a test: the
command line (one-line errors, --version, closed pipes, input shapes), wrong
arguments to the API, and the reprs."""

import subprocess
import sys

import numpy as np
import pytest

import ringfire as rf
from ringfire import cli


def run_cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "ringfire", *args], capture_output=True, text=True, timeout=300,
                          **kwargs)


@pytest.fixture(scope="module")
def ctx():
    return rf.ckks.Context.preset("N13_D2")


@pytest.fixture(scope="module")
def keyed(ctx):
    sk, keys = ctx.keygen(rotations=[1])
    return sk, keys


# ---- command line -------------------------------------------------------------------------------
def test_version_flag():
    out = run_cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"ringfire {rf.__version__}"


@pytest.mark.parametrize("make_input", ["missing", "corrupt", "text"])
def test_infer_errors_are_one_line(tmp_path, make_input):
    model = tmp_path / "model.onnx"
    if make_input == "corrupt":
        model.write_bytes(b"\x08\x07garbage that is not a protobuf" * 3)
    elif make_input == "text":
        model.write_text("hello")
    xs = tmp_path / "x.npy"
    np.save(xs, np.zeros((2, 4)))
    out = run_cli("infer", str(model if make_input != "missing" else tmp_path / "nope.onnx"), "--input", str(xs))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("ringfire: error:")


def test_debug_flag_shows_the_traceback(tmp_path):
    out = run_cli("--debug", "infer", str(tmp_path / "nope.onnx"), "--input", str(tmp_path / "x.npy"))
    assert out.returncode != 0 and "Traceback" in out.stderr


def test_closed_pipe_exits_quietly():
    # `ringfire info | head -1`: the reader leaves before the writer is done.
    proc = subprocess.Popen([sys.executable, "-m", "ringfire", "info"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "BrokenPipeError" not in err and "Traceback" not in err


def test_infer_on_a_device_that_is_missing_is_a_clear_error(tmp_path, capsys):
    # `infer --device cuda` runs on a GPU (tests/test_gpu_schemes.py); without one it says why.
    assert "--device" in run_cli("infer", "--help").stdout
    if rf.cuda_available():
        pytest.skip("a GPU is present")
    xs = tmp_path / "x.npy"
    np.save(xs, np.zeros((2, 16)))
    assert cli.main(["infer", str(_mlp(tmp_path)), "--input", str(xs), "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "cuda" in err and ("GPU" in err or "CUDA" in err) and "Traceback" not in err


def _mlp(tmp_path, width=16):
    from nn_models import mlp_bytes
    path = tmp_path / "mlp.onnx"
    path.write_bytes(mlp_bytes((width, 8, 4)))
    return path


def test_infer_wrong_input_width_names_both_shapes(tmp_path, capsys):
    xs = tmp_path / "x.npy"
    np.save(xs, np.zeros((3, 15)))
    assert cli.main(["infer", str(_mlp(tmp_path)), "--input", str(xs)]) == 2
    err = capsys.readouterr().err
    assert "(16,)" in err and "(3, 15)" in err and "reshape" not in err


def test_inference_progress_bar_only_when_asked(tmp_path, ctx, keyed, capsys):
    sk, keys = keyed
    model = rf.nn.load(str(_mlp(tmp_path, width=4)), ctx)
    enc = ctx.encrypt_batch(np.zeros((2, 4)), keys)
    client = rf.nn.LocalClient(ctx, sk, keys)
    model(enc, client=client)
    assert capsys.readouterr().err == ""
    model(enc, client=client, progress=True)
    err = capsys.readouterr().err
    assert "encrypted inference" in err and "ct/s" in err  # tqdm's bar, counted in ciphertexts
    # The command line shows it on a terminal only (here stderr is a pipe), never with --json.
    xs = tmp_path / "x.npy"
    np.save(xs, np.zeros((2, 4)))
    assert "encrypted inference" not in run_cli("infer", str(_mlp(tmp_path, width=4)), "--input", str(xs)).stderr


def test_infer_fit_input_layouts():
    from ringfire.nn.cli import fit_input as _fit_input
    nchw = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5)
    nhwc = nchw.transpose(0, 2, 3, 1)
    assert np.array_equal(_fit_input(nhwc, (3, 4, 5), "nhwc"), nchw)
    assert np.array_equal(_fit_input(nchw.reshape(2, -1), (3, 4, 5), "nchw"), nchw)
    with pytest.raises(ValueError, match="--layout nhwc"):
        _fit_input(nhwc, (3, 4, 5), "nchw")
    with pytest.raises(ValueError, match="batch"):
        _fit_input(np.zeros(60), (3, 4, 5), "nchw")


# ---- wrong arguments to the API ---------------------------------------------------------------
def test_wrong_arguments_raise_clear_errors(ctx, keyed):
    sk, keys = keyed
    ct = ctx.encrypt(np.arange(4.0), keys)
    with pytest.raises(TypeError, match="SecretKey"):
        ctx.decrypt(ct, None)
    with pytest.raises(TypeError, match="integer"):
        ct.rotate(1.7)
    with pytest.raises(TypeError, match="bytes"):
        ctx.load("text")
    with pytest.raises(ValueError, match="not a ringfire object"):
        ctx.load(b"junk")


# ---- reprs ---------------------------------------------------------------------------------------
def test_reprs_say_what_an_object_is(ctx, keyed):
    sk, keys = keyed
    assert repr(sk) == "SecretKey(ckks, N=8192, <hidden>)"
    assert f"{ctx.fingerprint:#018x}" in repr(keys.relin) and "RelinKey(ckks, N=8192" in repr(keys.relin)
    assert "1 keys, rotations [1]" in repr(keys.galois)
    assert repr(ctx.evaluator(keys)) == "ckks.Evaluator(keys: relin, galois)"
    assert repr(ctx.params).startswith("Parameters(CKKS: N=8192")
    assert "N=8192" in repr(ctx) and "security=128-bit" in repr(ctx)


# ---- the build's CPU target ---------------------------------------------------------------------
def test_a_build_for_another_cpu_refuses_to_import_with_the_fix(tmp_path):
    from ringfire import _cpu
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse4_2 popcnt avx bmi1 fma\n")
    flags = _cpu.cpu_flags(cpuinfo)
    assert _cpu.missing_extensions(["SSE4_2", "POPCNT", "AVX", "BMI", "FMA"], flags) == []
    assert _cpu.missing_extensions(["AVX2", "BMI2", "AVX512VNNI"], flags) == ["AVX2", "BMI2", "AVX512VNNI"]
    assert _cpu.missing_extensions(["AVX512VNNI"], flags | {"avx512_vnni"}) == []
    assert _cpu.missing_extensions(["AVX2"], None) == []  # the system does not say: do not guess
    (tmp_path / "_build_isa.txt").write_text("AVX2 NOTAREALEXTENSION\n")
    with pytest.raises(ImportError, match=r"NOTAREALEXTENSION.*RINGFIRE_ARCH= for any x86-64"):
        _cpu.check_cpu(tmp_path)
    # The installed build records what it assumes, and this CPU has it (or we would not be here).
    import pathlib
    installed = pathlib.Path(rf.__file__).parent / "_build_isa.txt"
    if installed.exists():
        assert _cpu.missing_extensions(_cpu.required_extensions(installed), _cpu.cpu_flags()) == []
