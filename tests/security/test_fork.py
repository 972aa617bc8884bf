"""ringfire in forked children (multiprocessing's default start method on
Linux before Python 3.14, Ray workers): the child must neither hang nor repeat
the parent's randomness. Each scenario runs in its own interpreter with a
deadline, so a hang fails the test instead of stalling the suite."""

import subprocess
import sys
import textwrap

import pytest

DEADLINE = 120  # seconds per scenario; each takes about a second when it works

PREAMBLE = """
import os, sys, numpy as np, ringfire as rf
ctx = rf.ckks.Context.preset("N13_D2")
sk, keys = ctx.keygen()
x = np.linspace(-1, 1, ctx.slots)
ct = ctx.encrypt(x, keys)
assert np.max(np.abs(ctx.decrypt(ct * ct, sk) - x * x)) < 1e-6   # the parent has computed (threads exist)
"""


def run(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PREAMBLE) + textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_forked_child_computes_after_its_parent_did():
    out = run("""
        pid = os.fork()
        if pid == 0:
            c = ctx.encrypt(x, keys)
            ok = np.max(np.abs(ctx.decrypt(c * c, sk) - x * x)) < 1e-6
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
    """)
    assert "child exit 0" in out


def test_parent_and_child_draw_different_randomness(tmp_path):
    out = run(f"""
        pid = os.fork()
        enc, pub = ctx.encrypt(x, keys).to_bytes(), ctx.keygen()[1].public.to_bytes()
        if pid == 0:
            open(r"{tmp_path}/child_enc", "wb").write(enc)
            open(r"{tmp_path}/child_pub", "wb").write(pub)
            os._exit(0)
        os.waitpid(pid, 0)
        print("encryptions differ", enc != open(r"{tmp_path}/child_enc", "rb").read())
        print("keys differ", pub != open(r"{tmp_path}/child_pub", "rb").read())
    """)
    assert "encryptions differ True" in out, out
    assert "keys differ True" in out, out


WORKER = """
import numpy as np, ringfire as rf

def square_and_check(args):
    params, keys_blob, sk_blob, seed = args
    ctx = rf.ckks.Context.from_bytes(params)
    keys = rf.ckks.KeySet(public=ctx.load(keys_blob[0]), relin=ctx.load(keys_blob[1]))
    sk = ctx.load(sk_blob)
    v = np.random.default_rng(seed).uniform(-1, 1, ctx.slots)
    c = ctx.encrypt(v, keys)
    return float(np.max(np.abs(ctx.decrypt(c * c, sk) - v * v)))

if __name__ == "__main__":
    import multiprocessing, sys, warnings
    warnings.simplefilter("ignore")
    method = sys.argv[1]
    ctx = rf.ckks.Context.preset("N13_D2")
    sk, keys = ctx.keygen()
    x = np.linspace(-1, 1, ctx.slots)
    c = ctx.encrypt(x, keys)
    ctx.decrypt(c * c, sk)  # the parent has used every part of the library
    job = (ctx.to_bytes(), (keys.public.to_bytes(), keys.relin.to_bytes()), sk.to_bytes())
    with multiprocessing.get_context(method).Pool(2) as pool:
        errors = pool.map(square_and_check, [job + (seed,) for seed in range(6)])
    print("max error", max(errors))
"""


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_pools(method, tmp_path):
    script = tmp_path / "pool_worker.py"
    script.write_text(WORKER)
    done = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True, timeout=DEADLINE,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    error = float(done.stdout.split("max error")[1])
    assert error < 1e-6
