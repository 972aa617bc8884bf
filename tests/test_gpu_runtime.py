"""The GPU runtime: every CKKS operation on the GPU gives the same bytes as
on the CPU (same inputs, same seeds), full pipelines, lazy placement and dirty
tracking, compute frames and the caching allocator, several streams at once,
the profiler. GPU cases skip cleanly without a GPU; the placement, frame and
error-path cases that need none run everywhere.
"""

import threading

import numpy as np
import pytest

import ringfire as rf
from ringfire import ckks

needs_gpu = pytest.mark.skipif(not rf.cuda_available(), reason="no CUDA backend or GPU in this build/machine")
SEED = bytes(range(32))


def make_context(device="cpu", preset="N13_D2", seed=SEED, **overrides):
    with pytest.warns(RuntimeWarning):
        return ckks.Context.preset(preset, device=device, insecure_deterministic_seed=seed, **overrides)


def setup(device="cpu", preset="N13_D2", seed=SEED, **overrides):
    """A deterministic context, keys and three ciphertexts: equal bytes for equal devices."""
    ctx = make_context(device, preset, seed, **overrides)
    sk, keys = ctx.keygen(rotations=[1, 2, 4, -3], conjugate=True)
    rng = np.random.default_rng(3)
    xs = [rng.uniform(-1, 1, ctx.slots) for _ in range(3)]
    cts = [ctx.encrypt(x, keys) for x in xs]
    return ctx, sk, keys, xs, cts


# ---- everywhere ------------------------------------------------------------------

def test_cpu_placement_is_the_identity():
    ctx, sk, keys, xs, (a, b, c) = setup()
    assert a.device == "cpu" and a.resident_on == ["cpu"]
    assert a.to("cpu").device == "cpu"
    assert np.allclose(ctx.decrypt(a.to("cpu") + b, sk), xs[0] + xs[1], atol=1e-5)


def test_without_gpu_placement_is_a_clear_error():
    if rf.cuda_available():
        pytest.skip("a GPU is present")
    ctx, sk, keys, xs, (a, b, c) = setup()
    with pytest.raises(NotImplementedError, match=r"cuda.*(GPU|CUDA)"):
        a.to("cuda")
    with pytest.raises(NotImplementedError, match=r"cuda.*(GPU|CUDA)"):
        ckks.Context.preset("N13_D2", device="cuda")
    with pytest.raises(ValueError, match="device"):
        a.to("tpu")


def test_secret_key_stays_on_the_host():
    ctx, sk, keys, xs, cts = setup()
    with pytest.raises(ValueError, match="stays on the host"):
        sk.to("cuda")


def test_a_frame_retains_released_blocks_until_it_ends():
    """Compute frames on the host pool (the same pool logic serves the GPU)."""
    ctx, sk, keys, xs, (a, b, c) = setup()
    with rf.cuda.frame("cpu"):
        inside = rf.cuda.pool_stats("cpu")
        assert inside["open_frames"] == 1
        for _ in range(3):
            (a * b).rotate(1)  # temporaries released inside the frame
        held = rf.cuda.pool_stats("cpu")
        assert held["bytes_retained"] > 0
    after = rf.cuda.pool_stats("cpu")
    assert after["open_frames"] == 0 and after["bytes_retained"] == 0
    assert after["bytes_cached"] >= held["bytes_retained"]
    # Reuse resumes: the same computation now hits the cache.
    hits = after["hits"]
    (a * b).rotate(1)
    assert rf.cuda.pool_stats("cpu")["hits"] > hits


# ---- on a GPU ----------------------------------------------------------------------

def same_bytes(cpu_ct, gpu_ct):
    assert gpu_ct.device.startswith("cuda")
    return cpu_ct.to_bytes() == gpu_ct.to_bytes()


OPS = {
    "add": lambda ev, a, b, c, p: ev.add(a, b),
    "sub": lambda ev, a, b, c, p: ev.sub(a, b),
    "negate": lambda ev, a, b, c, p: ev.negate(a),
    "add_plain": lambda ev, a, b, c, p: ev.add_plain(a, p),
    "sub_plain": lambda ev, a, b, c, p: ev.sub_plain(a, p),
    "add_scalar_real": lambda ev, a, b, c, p: ev.add_scalar(a, 0.25),
    "add_scalar_complex": lambda ev, a, b, c, p: ev.add_scalar(a, 0.25 - 0.5j),
    "multiply": lambda ev, a, b, c, p: ev.multiply(a, b),
    "square": lambda ev, a, b, c, p: ev.square(a),
    "relinearize": lambda ev, a, b, c, p: ev.relinearize(ev.multiply(a, b)),
    "mul_lin_rs": lambda ev, a, b, c, p: ev.rescale(ev.relinearize(ev.multiply(a, b))),
    "multiply_plain": lambda ev, a, b, c, p: ev.multiply_plain(a, p),
    "multiply_scalar": lambda ev, a, b, c, p: ev.multiply_scalar(a, -1.5),
    "multiply_integer": lambda ev, a, b, c, p: ev.multiply_integer(a, -7),
    "rescale": lambda ev, a, b, c, p: ev.rescale(ev.multiply_scalar(a, 0.5)),
    "mod_switch": lambda ev, a, b, c, p: ev.mod_switch(a, a.level - 1),
    "adjust_to": lambda ev, a, b, c, p: ev.adjust_to(a, a.level - 1),
    "rotate_keyed": lambda ev, a, b, c, p: ev.rotate(a, 1),
    "rotate_composed": lambda ev, a, b, c, p: ev.rotate(a, 7),
    "rotate_negative": lambda ev, a, b, c, p: ev.rotate(a, -3),
    "conjugate": lambda ev, a, b, c, p: ev.conjugate(a),
}


@needs_gpu
@pytest.mark.parametrize("preset", ["N13_D2", "N14_D6"])
def test_every_operation_is_bit_identical_to_the_cpu(preset):
    ctx, sk, keys, xs, (a, b, c) = setup("cpu", preset)
    ev = ctx.evaluator(keys)
    p = ctx.encode(xs[2], scale=a.scale)
    ga, gb, gc, gkeys = a.to("cuda"), b.to("cuda"), c.to("cuda"), keys.to("cuda")
    gev = ctx.evaluator(gkeys)
    gp = p.to("cuda")
    failing = [name for name, op in OPS.items() if not same_bytes(op(ev, a, b, c, p), op(gev, ga, gb, gc, gp))]
    cpu_many = ev.rotate_many(a, [0, 1, 2, 4])
    gpu_many = gev.rotate_many(ga, [0, 1, 2, 4])
    if not all(same_bytes(x, y) for x, y in zip(cpu_many, gpu_many)):
        failing.append("rotate_many")
    assert failing == [], f"{preset}: the GPU differs from the CPU in {failing}"


@needs_gpu
@pytest.mark.parametrize("preset", ["N13_D2", "N14_D6", "N15_D16", "N16_D30"])
def test_a_pipeline_on_a_cuda_context_matches_the_cpu_context(preset):
    results = {}
    for device in ("cpu", "cuda"):
        ctx, sk, keys, xs, (a, b, c) = setup(device, preset)
        assert a.device == ("cpu" if device == "cpu" else "cuda:0")
        y = ((a * b + c * 0.5).rotate(1) - 2 * a) * (c + 1.0)
        y = y + y.conjugate()
        results[device] = (y.to_bytes(), ctx.decrypt(y, sk))
        want = 2 * np.real((np.roll(xs[0] * xs[1] + xs[2] * 0.5, -1) - 2 * xs[0]) * (xs[2] + 1.0))
        error = np.max(np.abs(results[device][1] - want))
        assert error < 1e-3, f"{preset} on {device}: max error {error}"
    assert results["cpu"][0] == results["cuda"][0]
    assert np.array_equal(results["cpu"][1], results["cuda"][1])


@needs_gpu
def test_placement_is_lazy_and_writes_drop_stale_copies():
    ctx, sk, keys, xs, (a, b, c) = setup("cuda")
    assert a.device == "cuda:0" and a.resident_on == ["cpu"]  # encrypted on the host, not uploaded yet
    before = rf.cuda.pool_stats()["bytes_in_use"]
    s = a + b
    assert "cuda:0" in a.resident_on and s.resident_on == ["cuda:0"]  # results stay on the GPU
    assert rf.cuda.pool_stats()["bytes_in_use"] > before
    # An in-place write replaces the value: the host copy of `a` is stale and dropped.
    ev = ctx.evaluator(keys)
    ev.add_inplace(a, b)
    assert a.resident_on == ["cuda:0"]
    got = ctx.decrypt(a, sk)  # the download (a sync point) happens here
    assert "cpu" in a.resident_on
    assert np.max(np.abs(got - (xs[0] + xs[1]))) < 1e-5
    # .to("cpu") moves the value back; operations there run on the CPU.
    h = s.to("cpu")
    assert h.device == "cpu" and np.allclose(ctx.decrypt(h + 0.0, sk), xs[0] + xs[1], atol=1e-5)


@needs_gpu
def test_keys_upload_once_and_are_reused():
    ctx, sk, keys, xs, (a, b, c) = setup("cuda")
    a * b  # uploads the relinearization key
    misses = rf.cuda.pool_stats()["misses"]
    for _ in range(3):
        a * b
    assert rf.cuda.pool_stats()["misses"] == misses  # no new allocations: keys cached, temporaries reused
    assert "cuda:0" in keys.relin._res.devices


@needs_gpu
def test_mismatched_devices_are_clear_errors():
    ctx, sk, keys, xs, (a, b, c) = setup("cpu")
    native_ev = ctx._core_evaluator
    with pytest.raises(ValueError, match=r"different devices: cuda:0 vs cpu \(move one with \.to\(device\)\)"):
        native_ev.add(a.to("cuda")._native, b._native)
    with pytest.raises(ValueError, match="move the keys"):
        native_ev.relinearize(native_ev.multiply(a.to("cuda")._native, b.to("cuda")._native), keys.relin._native)


@needs_gpu
def test_gpu_frames_retain_until_the_end():
    ctx, sk, keys, xs, (a, b, c) = setup("cuda")
    with rf.cuda.frame():
        for _ in range(3):
            (a * b).rotate(1)
        assert rf.cuda.pool_stats()["bytes_retained"] > 0
    stats = rf.cuda.pool_stats()
    assert stats["bytes_retained"] == 0 and stats["open_frames"] == 0


@needs_gpu
def test_concurrent_streams_match_sequential_results():
    # Four contexts (each owns a stream) with different keys and data.
    contexts = [setup("cuda", "N14_D6", seed=bytes([i]) * 32) for i in range(4)]

    def work(entry):
        ctx, sk, keys, xs, (a, b, c) = entry
        y = a
        for _ in range(3):
            y = (y * b).rotate(1) + c
        return y.to_bytes()

    sequential = [work(e) for e in contexts]
    results = [None] * len(contexts)

    def run(i):
        results[i] = work(contexts[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(contexts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == sequential


@needs_gpu
def test_explicit_streams_in_a_frame_match_the_default_stream():
    entries = [setup("cuda", seed=bytes([i]) * 32) for i in range(3)]
    want = [((a * b).rotate(1)).to_bytes() for _, _, _, _, (a, b, c) in entries]
    streams = [rf.cuda.stream() for _ in entries]
    with rf.cuda.frame():
        outs = []
        for s, (_, _, _, _, (a, b, c)) in zip(streams, entries):
            with s:
                outs.append((a * b).rotate(1))
        rf.cuda.synchronize()
    assert [o.to_bytes() for o in outs] == want
    for s in streams:
        s.close()


@needs_gpu
def test_profiler_groups_kernels_by_name_and_operation(tmp_path):
    ctx, sk, keys, xs, (a, b, c) = setup("cuda")
    ev = ctx.evaluator(keys)

    def work():  # the explicit steps, then the operators (a * b relinearizes and rescales in one key switch)
        ev.rotate(ev.rescale(ev.relinearize(ev.multiply(a, b))), 1)
        (a * b).rotate(1)

    work()  # warm: uploads outside the profile
    with rf.cuda.profile() as prof:
        work()
    kernels = {r["name"] for r in prof.by_kernel()}
    ops = {r["name"] for r in prof.by_operation()}
    assert {"ntt_forward", "ntt_inverse"} <= kernels
    # ModUp's limbs go to their rows in the NTT's last pass: no scatter kernel
    assert "scatter_limbs" not in kernels
    # ModUp converts from a digit's few limbs: the fused kernel (the passes only past 8 source limbs)
    assert "base_convert_fused" in kernels
    assert {"ckks.multiply", "ckks.relinearize", "ckks.rescale", "ckks.rotate", "ckks.relinearize_rescale"} <= ops
    assert 0.2 < prof.ntt_share() < 1.0
    assert "NTT" in prof.table()
    prof.to_csv(tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().count("\n") == len(prof.records) + 1
    assert '"ntt_share"' in prof.to_json(tmp_path / "p.json")


@needs_gpu
def test_debug_sync_mode_gives_the_same_result():
    ctx, sk, keys, xs, (a, b, c) = setup("cuda")
    want = (a * b).to_bytes()
    rf.cuda.set_debug_sync(True)
    try:
        assert (a * b).to_bytes() == want
    finally:
        rf.cuda.set_debug_sync(False)


@needs_gpu
def test_native_save_and_decrypt_download_gpu_objects():
    from ringfire import _core
    ctx, sk, keys, xs, (a, b, c) = setup("cpu")
    g = a.to("cuda")._native
    assert g.device == "cuda:0"
    assert _core.save_ciphertext(g) == _core.save_ciphertext(a._native)
    assert _core.save_relin_key(keys.relin._on("cuda:0")) == _core.save_relin_key(keys.relin._native)
    exact = [ctx._core.decrypt(x, sk._native, ctx._prng, "insecure_exact")[0] for x in (g, a._native)]
    assert np.array_equal(np.asarray(exact[0]), np.asarray(exact[1]))


@needs_gpu
def test_the_design_contract_snippet_on_a_gpu():
    """DESIGN.md's user view: a CPU context, one ct.to("cuda"), operators, decrypt."""
    outputs = []
    for move in (False, True):
        ctx, sk, keys, xs, (a, b, c) = setup("cpu")
        ct = a.to("cuda") if move else a
        y = (ct * ct + 0.5).rotate(1)
        assert y.device == ("cuda:0" if move else "cpu")
        outputs.append((y.to_bytes(), ctx.decrypt(y, sk)))
    assert outputs[0][0] == outputs[1][0]
    assert np.max(np.abs(outputs[1][1] - np.roll(xs[0] ** 2 + 0.5, -1))) < 1e-4


@needs_gpu
def test_secret_key_encryptions_and_loads_on_a_cuda_context_compute_as_on_the_cpu():
    """A cuda context's ciphertexts encrypted with the secret key in one pass, and loaded from
    their seeded bytes (both made on the host in memory that is not zeroed first, then uploaded),
    give the CPU context's bytes through a GPU product, rescale and rotation."""
    results = {}
    for device in ("cpu", "cuda"):
        ctx, sk, keys, xs, (a, b, c) = setup(device)
        e = ctx.encrypt(xs[1], sk, level=ctx.max_level - 1)
        loaded = ctx.load(ctx.encrypt(xs[2], sk).to_bytes())
        ev = ctx.evaluator(keys)
        y = ev.rotate(ev.relinearize_rescale(ev.multiply(ev.mod_switch(loaded, e.level), e)), 1)
        assert y.device == ("cpu" if device == "cpu" else "cuda:0")
        results[device] = (e.to_bytes(), loaded.to_bytes(), y.to_bytes())
    assert results["cpu"] == results["cuda"]
