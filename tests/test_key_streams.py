"""Keys on the wire: every evaluation key kind is seeded (its uniform half travels as 32-byte
seeds), and key sets stream to and from files and sockets without their bytes ever being
held whole, with every check of the whole-buffer loads."""

import io
import socket
import threading

import numpy as np
import pytest

import ringfire as rf
from conftest import precision_bits


@pytest.fixture(scope="module")
def ckks_keys():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen(rotations=[1, 2, -1], conjugate=True, master_rotations=True)
    return ctx, sk, keys


@pytest.fixture(scope="module")
def boot_keys():
    with pytest.warns(RuntimeWarning, match="insecure"):
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE")
    sk, keys = ctx.keygen(bootstrap=True)
    return ctx, sk, keys


def _words(ctx, limbs: int) -> int:
    return ctx.poly_degree * limbs * 8


def test_every_evaluation_key_kind_travels_seeded(ckks_keys, boot_keys):
    """Serialized, a key is its b polynomials and one seed per a: about half its memory."""
    ctx, _, keys = ckks_keys
    for name in ("relin", "galois", "master"):
        key = getattr(keys, name)
        assert len(key.to_bytes()) < key.nbytes / 2 * 1.01 + 4096, name
    public_limbs = ctx.max_level + 1 + len(ctx.params.p_primes)
    assert len(keys.public.to_bytes()) < _words(ctx, public_limbs) + 4096  # b over Q P, a as a seed
    bctx, _, bkeys = boot_keys
    wire = len(bkeys.bootstrap.to_bytes())
    assert wire < bctx.bootstrap_plan().key_bytes / 2 * 1.01 + 4096
    assert wire == bctx.bootstrap_plan().wire_bytes  # what the plan says is sent, to the byte
    for scheme in ("bgv", "bfv"):
        sctx = getattr(rf, scheme).Context.preset("N13")
        _, skeys = sctx.keygen(rotations=[1], master_rotations=True)
        for key in (skeys.relin, skeys.galois, skeys.master):
            assert len(key.to_bytes()) < key.nbytes / 2 * 1.01 + 4096, (scheme, key)


def test_keys_stay_seeded_until_first_use_and_expand_on_request():
    """Keygen and seeded loads hold each switching key's b half only; ``expand()`` (or the first
    use) adds the a half, and the results do not depend on when that happened."""
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen(rotations=[1])
    assert not keys.relin._host().expanded
    x = np.random.default_rng(5).uniform(-1, 1, ctx.slots)
    ct = ctx.encrypt(x, keys)
    ev = ctx.evaluator(keys)
    lazy = ev.rotate(ev.relinearize(ev.multiply(ct, ct)), 1)
    assert keys.relin._host().expanded  # the first relinearization expanded it
    loaded = ctx.load_keys(io.BytesIO(_saved(keys)))
    assert not loaded.relin._host().expanded
    assert loaded.expand() is loaded and loaded.relin._host().expanded
    eager = ctx.evaluator(loaded).rotate(ctx.evaluator(loaded).relinearize(ev.multiply(ct, ct)), 1)
    assert lazy.to_bytes() == eager.to_bytes()  # the same key words either way
    assert precision_bits(ctx.decrypt(eager, sk), np.roll(x * x, -1)) > 20


def _saved(keys) -> bytes:
    buffer = io.BytesIO()
    keys.save_to(buffer)
    return buffer.getvalue()


def test_streamed_keys_are_the_same_bytes_and_load_back(ckks_keys, tmp_path):
    ctx, sk, keys = ckks_keys
    for name in ("public", "relin", "galois", "master"):
        key = getattr(keys, name)
        path = tmp_path / name
        assert key.save_to(path) == len(key.to_bytes())
        assert path.read_bytes() == key.to_bytes()
        assert ctx.load_from(path).to_bytes() == key.to_bytes()
        buf = io.BytesIO()
        key.save_to(buf)
        buf.seek(0)
        assert ctx.load_from(buf).to_bytes() == key.to_bytes()
    keys.save_to(tmp_path / "set")
    loaded = ctx.load_keys(tmp_path / "set")
    assert loaded.bootstrap is None and loaded.master.level == keys.master.level
    x = np.linspace(-1, 1, ctx.slots)
    out = ctx.evaluator(loaded).rotate(ctx.encrypt(x, loaded), 2)
    assert precision_bits(ctx.decrypt(out, sk).real, np.roll(x, -2)) > 20


def test_bootstrap_keys_stream(boot_keys):
    ctx, _, keys = boot_keys
    buf = io.BytesIO()
    keys.bootstrap.save_to(buf)
    assert buf.getvalue() == keys.bootstrap.to_bytes()
    buf.seek(0)
    assert ctx.load_from(buf).to_bytes() == keys.bootstrap.to_bytes()


def test_saving_hands_over_pieces_never_the_whole(ckks_keys):
    """What writing holds beyond the key: 1 MiB buffers, polynomials lent as views."""
    ctx, _, keys = ckks_keys
    pieces = []

    class Recorder:
        def write(self, view):
            pieces.append(len(view))

    keys.master.save_to(Recorder())
    assert sum(pieces) == len(keys.master.to_bytes()) > 8 << 20
    assert max(pieces) <= (1 << 20) + (1 << 18) and len(pieces) >= 8


def test_broken_streams_are_refused(ckks_keys, tmp_path):
    ctx, _, keys = ckks_keys
    data = keys.galois.to_bytes()
    cases = {"truncated": data[:-3], "cut in a polynomial": data[:len(data) // 2], "header only": data[:48],
             "flipped bit": data[:5000] + bytes([data[5000] ^ 4]) + data[5001:], "empty": b""}
    messages = {"truncated": "truncated", "cut in a polynomial": "truncated", "header only": "truncated",
                "flipped bit": "checksum mismatch|outside", "empty": "empty"}
    for name, blob in cases.items():
        with pytest.raises(ValueError, match=messages[name]):
            ctx.load_from(io.BytesIO(blob))
    forged = bytearray(data)
    forged[40:48] = (2**63).to_bytes(8, "little")  # the payload length
    with pytest.raises(ValueError, match="declares a 9223372036854775808-byte payload"):
        ctx.load_from(io.BytesIO(bytes(forged)))
    forged[40:48] = (len(data) * 1000).to_bytes(8, "little")  # plausible, but the keys end sooner
    with pytest.raises(ValueError, match="unexpected trailing bytes|truncated"):
        ctx.load_from(io.BytesIO(bytes(forged)))
    with pytest.raises(ValueError, match="not a streamed key"):
        ctx.load_from(io.BytesIO(ctx.encrypt(np.ones(3), keys).to_bytes()))
    with pytest.raises(ValueError, match="bad magic"):
        ctx.load_from(io.BytesIO(keys.galois.to_bytes(mac_key=rf.io.new_mac_key())))
    other = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 30], scale_bits=30, special_bits=[60])
    with pytest.raises(ValueError, match="different parameters"):
        other.load_from(io.BytesIO(data))
    with pytest.raises(TypeError, match="not streamed"):
        ctx.keygen()[0].save_to(tmp_path / "secret")


def test_keys_cross_a_loopback_socket(ckks_keys):
    """A client streams its keys through a TCP connection on 127.0.0.1; the server reads
    them as they arrive."""
    ctx, sk, keys = ckks_keys
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    received = {}

    def serve():
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as stream:
            received["keys"] = ctx.load_keys(stream)

    thread = threading.Thread(target=serve)
    thread.start()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client, client.makefile("wb") as out:
        sent = keys.save_to(out)
    thread.join(timeout=60)
    server.close()
    got = received["keys"]
    assert sent == sum(len(getattr(keys, n).to_bytes()) for n in ("public", "relin", "galois", "master"))
    assert got.galois.to_bytes() == keys.galois.to_bytes() and got.master.to_bytes() == keys.master.to_bytes()


def test_a_worker_opens_a_key_bundle_streamed(ckks_keys, tmp_path):
    """A Ray worker's key bundle (distributed/bundle.py) opens from its file key by key, without
    the bundle's bytes in memory; a part that lies about its size is refused."""
    from ringfire.distributed.bundle import KeyBundle, open_bundle_file
    ctx, _, keys = ckks_keys
    bundle = KeyBundle.of(ctx, keys)
    path = tmp_path / bundle.sha256
    path.write_bytes(bundle.blob)
    opened_ctx, opened = open_bundle_file(path)
    assert opened_ctx.fingerprint == ctx.fingerprint
    assert opened.relin.to_bytes() == keys.relin.to_bytes() and opened.galois.to_bytes() == keys.galois.to_bytes()
    path.write_bytes(bundle.blob + b"x")
    with pytest.raises(ValueError, match="after the last part"):
        open_bundle_file(path)
