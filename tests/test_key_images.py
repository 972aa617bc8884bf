"""Key images: switching keys written as they sit in memory and mapped read-only
(``key.save_image``, ``ctx.map_keys``). Mapped keys compute bit for bit what the keys
they came from compute, take no anonymous memory of the process, and a foreign,
truncated or corrupted image is refused with the reason."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ringfire as rf
from ringfire.memory_guard import proc_memory

# The toy bootstrapping parameters warn at every use; the fixture checks the warning once.
pytestmark = pytest.mark.filterwarnings("ignore:.*the security check is disabled:RuntimeWarning")


def _rss_anon() -> int:
    return proc_memory("RssAnon")["RssAnon"]


@pytest.fixture(scope="module")
def ckks_keys():
    ctx = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60])
    sk, keys = ctx.keygen(rotations=[1, 2, -3], conjugate=True)
    return ctx, sk, keys


def test_mapped_keys_compute_what_the_keys_compute(ckks_keys, tmp_path):
    ctx, sk, keys = ckks_keys
    seeded = keys.relin.save_image(tmp_path / "relin-seeded")  # written before any use: seeds only
    from_seeds = keys.relin.save_image(tmp_path / "relin-from-seeds", expanded=True)  # a digit at a time
    assert not keys.relin._host().expanded  # the key itself stays seeded
    keys.relin.expand()
    keys.galois.expand()
    expanded = keys.relin.save_image(tmp_path / "relin")
    assert seeded < expanded / 2 + 8192 and from_seeds == expanded
    assert (tmp_path / "relin-from-seeds").read_bytes() == (tmp_path / "relin").read_bytes()
    keys.galois.save_image(tmp_path / "galois")
    relin, galois = ctx.map_keys(tmp_path / "relin"), ctx.map_keys(tmp_path / "galois")
    assert isinstance(relin, rf.rlwe.keys.RelinKey) and isinstance(galois, rf.rlwe.keys.GaloisKeys)
    assert relin.mapped and galois.mapped and not keys.relin.mapped
    assert galois.rotations() == keys.galois.rotations() and galois.has_conjugation()
    assert relin.nbytes == keys.relin.nbytes
    x = np.random.default_rng(3).uniform(-1, 1, ctx.slots)
    c = ctx.encrypt(x, keys)

    def circuit(ev):
        square = ev.relinearize_rescale(ev.multiply(c, c))
        return ev.conjugate(ev.rotate(ev.rotate(square, 1), -3))

    mapped = circuit(ctx.evaluator(rf.rlwe.keys.KeySet(relin=relin, galois=galois)))
    assert mapped.to_bytes() == circuit(ctx.evaluator(keys)).to_bytes()
    np.testing.assert_allclose(ctx.decrypt(mapped, sk).real, np.roll(x * x, 2), atol=1e-5)  # against NumPy
    # The seeded image maps seeded and expands its uniform half as a loaded key does.
    lazy = ctx.map_keys(tmp_path / "relin-seeded")
    assert lazy.mapped and not lazy._host().expanded
    assert lazy.to_bytes() == keys.relin.to_bytes()
    os.unlink(tmp_path / "relin")  # the mapping outlives the name
    assert circuit(ctx.evaluator(rf.rlwe.keys.KeySet(relin=relin, galois=galois))).to_bytes() == mapped.to_bytes()


def test_mapping_takes_no_anonymous_memory(tmp_path):
    """The keys' pages are the page cache's: mapping and reading every page (verify) leaves
    RssAnon where it was, where loading the same keys adds their size."""
    ctx = rf.ckks.Context(poly_degree=2**14, coeff_bits=[50, 40, 40, 40], scale_bits=40, special_bits=[60])
    _, keys = ctx.keygen(rotations=[1, 2, 4, 8, 16, 32])
    size = keys.galois.nbytes
    before = _rss_anon()
    keys.galois.save_image(tmp_path / "galois", expanded=True)  # the uniform halves a digit at a time
    assert _rss_anon() - before < size / 8, (_rss_anon() - before, size)
    blob = keys.galois.to_bytes()
    del keys
    # Freed blocks the pool keeps for reuse (these keys', earlier tests') would absorb the load
    # below unseen: RssAnon counts new memory only from an empty cache.
    rf.memory.flush()
    before = _rss_anon()
    mapped = ctx.map_keys(tmp_path / "galois", verify=True)
    mapped_growth = _rss_anon() - before
    before = _rss_anon()
    loaded = ctx.load(blob).expand()
    loaded_growth = _rss_anon() - before
    assert size >= 24 * 2**20
    assert mapped_growth < 2**20, mapped_growth
    assert loaded_growth > size / 2, (loaded_growth, size)
    assert mapped.to_bytes() == loaded.to_bytes()


@pytest.fixture(scope="module")
def boot_image(tmp_path_factory):
    with pytest.warns(RuntimeWarning, match="insecure"):
        ctx = rf.ckks.Context.preset("N12_BOOT_INSECURE")
    sk, keys = ctx.keygen(bootstrap=True)
    path = tmp_path_factory.mktemp("boot") / "boot"
    keys.bootstrap.save_image(path)
    return ctx, sk, keys, path


def test_bootstrapping_keys_map_and_bootstrap_the_same(boot_image):
    ctx, sk, keys, path = boot_image
    boot = ctx.map_keys(path)
    assert type(boot) is type(keys.bootstrap) and boot.mapped and boot.expand_per_use
    assert boot.resident_bytes == 0  # seeded halves mapped, uniform halves expanded at each use
    x = np.linspace(-0.5, 0.5, ctx.slots)
    c = ctx.encrypt(x, keys, level=ctx.bootstrap_min_level)
    mapped = ctx.evaluator(rf.rlwe.keys.KeySet(relin=keys.relin, bootstrap=boot)).bootstrap(c)
    assert mapped.to_bytes() == ctx.evaluator(keys).bootstrap(c).to_bytes()
    assert np.max(np.abs(ctx.decrypt(mapped, sk).real - x)) < 2**-8


def test_another_process_maps_the_same_image(ckks_keys, tmp_path):
    ctx, sk, keys = ckks_keys
    keys.relin.save_image(tmp_path / "relin")
    (tmp_path / "params").write_bytes(ctx.to_bytes())
    x = np.arange(8) / 16
    c = ctx.encrypt(x, keys)
    (tmp_path / "in").write_bytes(c.to_bytes())
    code = ("import sys, ringfire as rf; d = sys.argv[1]; ctx = rf.ckks.Context.from_bytes(open(d + '/params', 'rb')"
            ".read()); key = ctx.map_keys(d + '/relin'); c = ctx.load(open(d + '/in', 'rb').read()); "
            "ev = ctx.evaluator(rf.rlwe.keys.KeySet(relin=key)); "
            "open(d + '/out', 'wb').write(ev.relinearize(ev.multiply(c, c)).to_bytes())")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=120)
    out = ctx.load((tmp_path / "out").read_bytes())
    np.testing.assert_allclose(ctx.decrypt(out, sk).real[:8], x * x, atol=1e-6)


def test_refusals_name_the_problem(ckks_keys, boot_image, tmp_path):
    ctx, sk, keys = ckks_keys
    keys.relin.save_image(tmp_path / "relin")
    data = (tmp_path / "relin").read_bytes()
    with pytest.raises(FileNotFoundError, match="no key image"):
        ctx.map_keys(tmp_path / "missing")
    with pytest.raises(TypeError, match="verify takes True or False"):
        ctx.map_keys(tmp_path / "relin", verify=1)
    with pytest.raises(TypeError, match="expanded takes True or False"):
        keys.relin.save_image(tmp_path / "nope", expanded="yes")
    (tmp_path / "short").write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="truncated or padded"):
        ctx.map_keys(tmp_path / "short")
    (tmp_path / "blob").write_bytes(keys.relin.to_bytes())
    with pytest.raises(ValueError, match="not a ringfire key image"):
        ctx.map_keys(tmp_path / "blob")
    flipped = bytearray(data)
    flipped[-64] ^= 1
    (tmp_path / "flipped").write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match="checksum does not match"):
        ctx.map_keys(tmp_path / "flipped")
    other = rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 41], scale_bits=40, special_bits=[60])
    with pytest.raises(ValueError, match="other parameters"):
        other.map_keys(tmp_path / "relin")
    with pytest.raises(ValueError, match="bootstrap key set image does not belong to bgv parameters"):
        rf.bgv.Context.preset("N13").map_keys(boot_image[3])
    with pytest.raises(ValueError, match="other parameters"):
        boot_image[0].map_keys(tmp_path / "relin")
    for key in (keys.public, sk):
        with pytest.raises(TypeError, match="has no image form"):
            key.save_image(tmp_path / "nope")
    assert not any(p.name.startswith("nope") for p in tmp_path.iterdir())  # nothing left behind



def test_a_ray_workers_bundle_maps_its_keys_from_images_written_once(ckks_keys, tmp_path):
    """A worker's key bundle (distributed/bundle.py): the first open writes the images beside
    it, later opens (other worker processes on the node) only map them, and a damaged image
    is written again from the bundle."""
    from ringfire.distributed.bundle import KeyBundle, image_paths, map_bundle_file
    ctx, _, keys = ckks_keys
    bundle = KeyBundle.of(ctx, rf.rlwe.keys.KeySet(relin=keys.relin, galois=keys.galois))
    path = tmp_path / bundle.sha256
    path.write_bytes(bundle.blob)
    opened_ctx, opened = map_bundle_file(path)
    images = image_paths(path)
    assert sorted(images) == ["galois", "relin"] and all(p.exists() for p in images.values())
    assert opened.relin.mapped and opened.galois.mapped and opened_ctx.fingerprint == ctx.fingerprint
    assert opened.relin.to_bytes() == keys.relin.to_bytes() and opened.galois.to_bytes() == keys.galois.to_bytes()
    written = {kind: p.stat().st_mtime_ns for kind, p in images.items()}
    _, again = map_bundle_file(path)
    assert {kind: p.stat().st_mtime_ns for kind, p in images.items()} == written  # mapped, not rewritten
    damaged = bytearray(images["relin"].read_bytes())
    damaged[-16] ^= 4
    (tmp_path / "damaged").write_bytes(bytes(damaged))
    os.replace(tmp_path / "damaged", images["relin"])
    _, healed = map_bundle_file(path)
    assert healed.relin.mapped and healed.relin.to_bytes() == keys.relin.to_bytes()
