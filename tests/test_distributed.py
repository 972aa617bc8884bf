"""ringfire.distributed on a real multi-node Ray cluster on this machine (ray.cluster_utils:
a head with no CPU for the driver and worker nodes of one CPU each, every address on
127.0.0.1): distributed runs equal the in-process ones bit for bit (the same deterministic
seed, the same calls in the same order), keys reach each node once, and lost nodes and
crashed workers cost only their unfinished tasks."""

import json
import os
import subprocess
import sys
import textwrap
import time
import warnings

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray's loopback mode: nothing leaves 127.0.0.1

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import nn_models as M  # noqa: E402
import ringfire as rf  # noqa: E402

ray = pytest.importorskip("ray", reason="pip install 'ringfire[ray]'")
from ray.cluster_utils import Cluster  # noqa: E402

SEED = bytes(range(32))
MiB = 2**20
# The functions these tests map are defined here, a module the workers cannot import: they
# travel by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class TestCluster:
    """A head (the driver's, no CPU) and worker nodes, each with its own key cache."""

    def __init__(self, base):
        self.base = base
        # Dead nodes are noticed within ~2 s instead of Ray's default ~15-30 s (health checks).
        fast_health = {"health_check_period_ms": 500, "health_check_timeout_ms": 500,
                       "health_check_failure_threshold": 3}
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "object_store_memory": 400 * MiB, "_system_config": fast_health})
        self.workers, self.added = [], 0
        for _ in range(2):
            self.add()
        ray.init(address=self.cluster.address, log_to_driver=False, logging_level="WARNING")

    def add(self):
        cache = self.base / f"node{self.added}"
        self.added += 1
        node = self.cluster.add_node(num_cpus=1, object_store_memory=400 * MiB, env_vars={"RINGFIRE_KEY_CACHE": str(cache)})
        self.workers.append(node)
        self.cluster.wait_for_nodes()
        return node

    def kill(self, node):
        """The node is gone at once, as when a machine dies (no grace)."""
        self.workers.remove(node)
        self.cluster.remove_node(node, allow_graceful=False)

    def fetches(self) -> dict:
        """Node cache directory -> the bundle hashes fetched into it."""
        out = {}
        for log in self.base.glob("node*/fetches.log"):
            out[log.parent.name] = [line.split()[0] for line in log.read_text().splitlines()]
        return out

    def close(self):
        ray.shutdown()
        self.cluster.shutdown()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = TestCluster(tmp_path_factory.mktemp("nodes"))
    yield c
    c.close()


def quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deterministic seeds and the toy ring say they are insecure
        return fn()


# The digits models' worst-case bounds exceed level 0's room (decryption checks the values).
pytestmark = pytest.mark.filterwarnings("ignore:.*may have outgrown:RuntimeWarning")


def tensor_bytes(enc) -> list:
    return [None if c is None else c.to_bytes() for c in enc.cts.flat]


def twice(build, executor):
    """``build()`` -> (ctx, run) run in process and on ``executor``, each from a fresh context
    with the same seed: the encrypted outputs of both, and the first run's context and key."""
    outs = []
    for ex in (None, executor):
        ctx, sk, run = build()
        outs.append(run(ex))
    return outs[0], outs[1], ctx, sk


def digits_models():
    x_train, y_train, x_test, _ = M.digits_split()
    mlp = M.mlp_onnx(M.mlp_train(x_train, y_train, epochs=5))
    cnn = M.cnn_onnx(M.cnn_train(x_train.reshape(-1, 1, 8, 8), y_train, pool="max", epochs=5), pool="max")
    return mlp, cnn, x_test


def client_aided(onnx_bytes, x, **options):
    def build():
        ctx = quiet(lambda: rf.ckks.Context.preset("N13_D2", insecure_deterministic_seed=SEED))
        model = rf.nn.load(onnx_bytes, ctx, **options)
        sk, keys = ctx.keygen()
        client = rf.nn.LocalClient(ctx, sk, keys)
        return ctx, sk, lambda ex: model(ctx.encrypt_batch(x, keys), client=client, executor=ex)
    return build


def toy_context(user_levels=6):
    """The toy bootstrapping ring with room for a model (NOT SECURE, deterministic)."""
    options = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
    options.update(coeff_bits=[60] + [40] * user_levels + [45] * 3 + [60] * 11 + [56] * 3, dnum=8)
    return quiet(lambda: rf.ckks.Context(**options, insecure_deterministic_seed=SEED))


def bootstrapped(onnx_bytes, x, calibration, packing="batch"):
    def build():
        ctx = toy_context()
        model = rf.nn.load(onnx_bytes, ctx, activation="poly", calibration=calibration, packing=packing)
        sk, keys = ctx.keygen(rotations=model.rotations() if packing == "inter" else (), bootstrap=True)
        return ctx, sk, lambda ex: model(ctx.encrypt_batch(x, keys, packing=packing), executor=ex)
    return build


def test_client_aided_models_are_bit_identical_and_keys_reach_each_node_once(cluster):
    mlp, cnn, x_test = digits_models()
    executor = rf.distributed.RayExecutor()
    assert executor.workers == 2
    x = x_test[:8]
    for onnx_bytes, inputs in ((mlp, x), (cnn, x.reshape(-1, 1, 8, 8))):
        local, remote, ctx, sk = twice(client_aided(onnx_bytes, inputs), executor)
        assert tensor_bytes(local) == tensor_bytes(remote)
        assert np.max(np.abs(ctx.decrypt_batch(remote, sk) - M.ort_run(onnx_bytes, inputs))) < 1e-3
    # Masks come from the OS whatever the seed (they protect the values): the same results, not bits.
    ctx, sk, run = client_aided(cnn, x.reshape(-1, 1, 8, 8), masking=True)()
    got = ctx.decrypt_batch(run(executor), sk)
    assert np.max(np.abs(got - M.ort_run(cnn, x.reshape(-1, 1, 8, 8)))) < 1e-3
    assert len(executor.stats["nodes"]) == 2 and executor.stats["retried"] == 0
    fetched = cluster.fetches()
    # Every node that ran a task fetched each key set once, however many tasks it ran.
    assert executor.stats["tasks"] > 2 * len(fetched)
    for hashes in fetched.values():
        assert len(hashes) == len(set(hashes)) >= 1
    # The workers mapped the keys from images beside each node's bundle (one copy per node).
    assert executor.stats["keys_mapped"] and executor.summary()["keys_mapped"]
    assert executor.summary()["peak_node_pss_bytes"] > 0 and len(executor.stats["node_memory"]) == 2
    with pytest.raises(TypeError, match="map_keys takes True or False"):
        rf.distributed.RayExecutor(map_keys="yes")
    for node, hashes in fetched.items():
        assert all((cluster.base / node / f"{sha}.relin.image").exists() for sha in hashes)
    # Each map's wall time, with its label; the key sets published once each.
    assert len(executor.stats["map_seconds"]) == executor.stats["maps"]
    assert all(label and items > 0 and seconds > 0 for label, items, _, seconds in executor.stats["map_seconds"])
    assert executor.summary()["key_sets_published"] == 3 and executor.summary()["publish_seconds"] > 0


def test_keys_published_ahead_are_published_once_and_let_go_with_them(cluster):
    import gc

    from ringfire.distributed.bundle import KeyBundle
    executor = rf.distributed.RayExecutor()
    ctx = quiet(lambda: rf.ckks.Context.preset("N13_D2", insecure_deterministic_seed=SEED))
    sk, keys = ctx.keygen()
    sha = executor.publish_keys(ctx, keys)
    assert sha == executor.publish_keys(ctx, keys) == KeyBundle.of(ctx, keys).sha256
    assert executor.summary()["key_sets_published"] == 1 and len(executor._bundles) == 1
    # A run with those keys finds them published: no second bundle.
    x = np.zeros((2, 4))
    enc = ctx.encrypt_batch(x, keys)
    executor.map(lambda ev, shared, item, const: shared[item], range(4), ev=ctx.evaluator(keys),
                 shared=enc.cts.reshape(-1))
    assert executor.summary()["key_sets_published"] == 1
    # Nor does a server's job, which makes a KeySet of the session's cached keys.
    again = rf.rlwe.KeySet(relin=keys.relin, galois=keys.galois, bootstrap=keys.bootstrap)
    assert executor.publish_keys(ctx, again) == sha and executor.summary()["key_sets_published"] == 1
    del again
    # A session's keys dropped: its bundle goes too (the object store frees it).
    del ctx, sk, keys, enc
    gc.collect()
    assert len(executor._bundles) == 0


def test_an_inter_packed_bootstrapped_residual_cnn_is_bit_identical(cluster):
    """One sample per task (the whole model on one ciphertext, bootstraps included)."""
    rng = np.random.default_rng(12)
    executor = rf.distributed.RayExecutor()
    residual = M.residual_cnn(rng)
    images = rng.uniform(-1, 1, (2, 1, 4, 4))
    calibration = rng.uniform(-1, 1, (500, 1, 4, 4))
    local, remote, ctx, sk = twice(bootstrapped(residual, images, calibration, packing="inter"), executor)
    assert tensor_bytes(local) == tensor_bytes(remote) and executor.stats["tasks"] == 2
    assert np.max(np.abs(ctx.decrypt_batch(remote, sk) - M.ort_run(residual, images))) < 0.1


def test_three_nodes_killed_mid_run_lose_nothing(cluster):
    """A bootstrapped model in batch packing (linear layers, polynomial activations and
    refreshes all go out), and a node dies without grace while a layer runs, in three layers
    of the run (a new node joins after each): the run finishes with the in-process result bit
    for bit, the lost chunks ran again."""
    x_train, y_train, x_test, _ = M.digits_split()
    deep, _ = M.deep_mlp_onnx(x_train, y_train, hidden=(16, 16))
    build = bootstrapped(deep, x_test[:4], x_train)
    ctx, sk, run = build()
    expected = tensor_bytes(run(None))
    killed = []

    def kill_one(done, total, label, retried):
        if len(killed) < 3 and label not in killed and done < total:  # mid-layer, once per layer
            killed.append(label)
            cluster.kill(cluster.workers[0])
            cluster.add()

    executor = rf.distributed.RayExecutor(progress=kill_one, chunks_per_worker=4)
    ctx, sk, run = build()
    got = run(executor)
    assert len(killed) == 3 and tensor_bytes(got) == expected
    assert executor.stats["retried"] >= 1 and len(cluster.workers) == 2
    # Each node's worker held the keys once (streamed from the node's bundle file, never beside
    # its bytes) and its share of the work: within the single-process plan's peak, plus the
    # interpreter, Ray's worker and imports.
    ceiling = model_plan_peak(deep, x_train) + 400 * MiB
    assert max(executor.stats["peak_rss"].values()) < ceiling, (executor.stats["peak_rss"], ceiling)


def test_logistic_regression_training_is_bit_identical(cluster):
    """Two HELR iterations (ringfire.apps.logreg) with a bootstrap between them: each iteration's
    gradient shares (one per data ciphertext) and the bootstrap of (w, v) run on the cluster."""
    from ringfire.apps import logreg
    rng = np.random.default_rng(4)
    X, y = logreg.prepare(rng.uniform(-1, 1, (128, 31)), rng.integers(0, 2, 128))

    def train(executor):
        ctx = quiet(lambda: rf.ckks.Context.preset("N12_BOOT_INSECURE", coeff_bits=[60] + [40] * 9 + [60] * 11 + [56] * 3,
                                                   dnum=8, bootstrap={"stc_first": True}, insecure_deterministic_seed=SEED))
        trainer = logreg.EncryptedTrainer(ctx, 32)
        sk, _ = trainer.keygen()
        report = logreg.FitReport()
        w = trainer.fit(X, y, 2, report=report, executor=executor)
        return w.to_bytes(), trainer.decrypt_weights(w, sk), report

    local = train(None)
    executor = rf.distributed.RayExecutor()
    remote = train(executor)
    assert remote[0] == local[0]
    assert [s.bootstraps for s in remote[2].iterations] == [0, 1]
    assert np.abs(remote[1] - logreg.train_plain(X, y, 2)).max() < 1e-4
    # 128 samples in rows of 32 features fill two data ciphertexts of 64 rows: two shares an iteration.
    labels = [label for label, *_ in executor.stats["map_seconds"]]
    assert labels == ["logreg gradient", "logreg bootstrap", "logreg gradient"]
    assert executor.stats["items"] == 5 and len(executor.stats["nodes"]) == 2


def model_plan_peak(onnx_bytes, calibration) -> int:
    model = rf.nn.load(onnx_bytes, toy_context(), activation="poly", calibration=calibration)
    return model.plan().peak_bytes


def crash_once(ct, marker):
    """Kills its worker process the first time it runs (a segfault, an OOM kill), then works."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return ct + 1.0


def test_a_crashed_worker_is_replaced_and_reloads_keys_from_its_node(cluster, tmp_path):
    ctx = quiet(lambda: rf.ckks.Context.preset("N13_D2", insecure_deterministic_seed=SEED))
    sk, keys = ctx.keygen()
    cts = [ctx.encrypt(np.full(4, float(i)), keys) for i in range(4)]
    executor = rf.distributed.RayExecutor()
    marker = str(tmp_path / "crashed")
    out = rf.distributed.map(lambda ct: crash_once(ct, marker), cts, executor=executor)
    assert executor.stats["retried"] >= 1 and os.path.exists(marker)
    assert [np.round(ctx.decrypt(c, sk)[:1], 6).tolist() for c in out] == [[i + 1.0] for i in range(4)]
    # The worker that replaced the crashed one read the keys from its node's disk: no node
    # fetched a key set twice.
    for hashes in cluster.fetches().values():
        assert len(hashes) == len(set(hashes))


def test_errors_of_the_work_itself_are_raised_unchanged_and_not_retried(cluster):
    ctx = quiet(lambda: rf.ckks.Context.preset("N13_D2", insecure_deterministic_seed=SEED))
    sk, keys = ctx.keygen()
    executor = rf.distributed.RayExecutor()
    deep = [ctx.encrypt([1.0], keys)]
    with pytest.raises(ValueError, match="out of levels"):
        rf.distributed.map(lambda ct: ct * ct * ct * ct, deep, executor=executor)
    assert executor.stats["retried"] == 0


def test_a_driver_that_dies_frees_the_cluster(cluster, tmp_path):
    """Its tasks are cancelled with it: the nodes' CPUs are free again within seconds, and the
    next driver runs."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        import ray, ringfire as rf
        ray.init(address={cluster.cluster.address!r}, log_to_driver=False, logging_level="ERROR")
        ctx = rf.ckks.Context.preset("N13_D2")
        sk, keys = ctx.keygen()
        cts = [ctx.encrypt([1.0], keys) for _ in range(4)]
        print("running", flush=True)
        rf.distributed.map(lambda ct: (time.sleep(60), ct)[1], cts, executor=rf.distributed.RayExecutor())
    """))
    driver = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert driver.stdout.readline().strip() == "running"
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) > 0 and time.monotonic() < deadline:
        time.sleep(0.2)  # the driver's tasks hold both CPUs
    assert ray.available_resources().get("CPU", 0) == 0
    driver.kill()
    driver.wait(timeout=10)
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2


def test_the_command_line_and_the_server_run_their_layers_on_the_cluster(cluster, tmp_path, capsys):
    """``ringfire infer --ray ADDRESS`` and ``ringfire serve --ray``: the same answers as
    onnxruntime, the work done by the cluster's nodes."""
    from ringfire import cli
    from serve_support import batch, server_thread, tokens_file

    from ringfire.serve import Client, ServeConfig
    path = tmp_path / "mlp.onnx"
    path.write_bytes(M.mlp_bytes((16, 8, 4)))
    x = batch(6, 16, seed=3)
    np.save(tmp_path / "x.npy", x)
    assert cli.main(["infer", str(path), "--input", str(tmp_path / "x.npy"),
                     "--ray", cluster.cluster.address, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["top1_agreement"] == 1.0 and report["max_abs_error"] < 1e-3
    assert report["distributed"]["nodes"] >= 1 and report["distributed"]["tasks"] >= 4
    tokens = tokens_file(tmp_path / "tokens")
    config = ServeConfig(model=str(path), store=str(tmp_path / "store"), tokens=str(tmp_path / "tokens"),
                         preset="N13_D2", requests_per_second=400, ray=cluster.cluster.address)
    with server_thread(config) as (url, app):
        with Client(url, tokens["alice"]) as client:
            session = client.session("mlp", progress=False)
            y = session.infer(x, progress=False)
            session.infer(x[:2], progress=False)
        assert np.max(np.abs(y - M.ort_run(path.read_bytes(), x))) < 1e-3
        summary = app.state.runner.executor.summary()
        # Each job makes a KeySet of the session's cached keys: the cluster gets them once.
        assert summary["tasks"] >= 8 and summary["key_sets_published"] == 1


def test_the_service_runs_as_replicas_that_share_its_store(cluster, tmp_path):
    """``ringfire serve --ray --replicas 2``: two Ray Serve replicas on two nodes behind one
    proxy answer the same sessions, keys and jobs (the answers onnxruntime's); a replica killed
    with a job waiting on its client: the other reports the job failed within seconds, and the
    service goes on taking jobs."""
    import signal

    import httpx
    serve = pytest.importorskip("ray.serve", reason="pip install 'ringfire[ray]' (Ray Serve)")
    from serve_support import batch, free_port, tokens_file

    from ringfire.serve import Client, ServeConfig, ServerError, replicas
    path = tmp_path / "mlp.onnx"
    path.write_bytes(M.mlp_bytes((16, 8, 4)))
    tokens = tokens_file(tmp_path / "tokens")
    config = ServeConfig(model=str(path), store=str(tmp_path / "store"), tokens=str(tmp_path / "tokens"),
                         preset="N13_D2", requests_per_second=400, silent_seconds=2.0)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    x = batch(6, 16, seed=4)
    try:
        replicas.run(config, 2, address=cluster.cluster.address, host="127.0.0.1", port=port)
        names = {httpx.get(f"{url}/v2/health/live").headers["x-ringfire-process"] for _ in range(24)}
        assert len(names) == 2  # both replicas answer through the one address
        with pytest.raises(RuntimeError, match="already runs on this cluster"):
            replicas.run(config, 1, address=cluster.cluster.address, host="127.0.0.1", port=port)
        with pytest.raises(ValueError, match="5 replicas take one node each"):
            replicas.run(config, 5, address=cluster.cluster.address, host="127.0.0.1", port=port)
        with Client(url, tokens["alice"]) as client:
            session = client.session("mlp", progress=False)
            ys = [session.infer(x, progress=False) for _ in range(3)]
            for y in ys:
                assert np.max(np.abs(y - M.ort_run(path.read_bytes(), x))) < 1e-3
            # A job whose client does not answer its round, then its replica killed outright.
            job = session.submit(session.ctx.encrypt_batch(x, session.secret_key))
            deadline = time.monotonic() + 30
            while client.request("GET", f"/v1/jobs/{job}").json()["state"] != "awaiting_client":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            import sqlite3
            with sqlite3.connect(tmp_path / "store" / "state.sqlite") as db:
                owner = db.execute("select owner from jobs where id = ?", (job,)).fetchone()[0]
                owners = {row[0] for row in db.execute("select owner from jobs")}
                pid = db.execute("select pid from server_processes where id = ?", (owner,)).fetchone()[0]
            assert owners <= names and owner in names
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 60
            while (status := client.request("GET", f"/v1/jobs/{job}").json())["state"] != "failed":
                assert time.monotonic() < deadline, status
                time.sleep(0.2)
            assert "stopped" in status["error"]
            with pytest.raises(ServerError, match="failed"):
                session.wait(job)
            # Taken by the survivor or by the replica Ray Serve starts in the dead one's place.
            y = session.infer(x, progress=False)
            assert np.max(np.abs(y - M.ort_run(path.read_bytes(), x))) < 1e-3
    finally:
        serve.shutdown()


def test_the_guide_runs_as_written(cluster):
    """docs/distributed.md's Python snippets, against this cluster (its address for HEAD_IP:6379)
    and a small client-aided model on the toy ring."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "distributed.md").read_text()
    snippets = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(snippets) == 5
    ctx = toy_context()
    sk, keys = ctx.keygen(bootstrap=True)
    model = rf.nn.load(M.mlp_bytes((16, 8, 4)), ctx)
    x = np.random.default_rng(5).uniform(-1, 1, (4, 16))
    namespace = {"rf": rf, "ctx": ctx, "sk": sk, "keys": keys, "model": model, "x": x,
                 "enc": ctx.encrypt_batch(x, keys), "client": rf.nn.LocalClient(ctx, sk, keys),
                 "cts": [ctx.encrypt([0.25, -0.5], keys) for _ in range(2)]}
    for snippet in snippets:
        exec(compile(snippet.replace('"HEAD_IP:6379"', repr(cluster.cluster.address)), "docs/distributed.md", "exec"),
             namespace)
    assert np.max(np.abs(ctx.decrypt_batch(namespace["out"], sk) - M.ort_run(M.mlp_bytes((16, 8, 4)), x))) < 1e-3
    assert [np.round(ctx.decrypt(c, sk)[:2], 3).tolist() for c in namespace["refreshed"]] == [[0.25, -0.5]] * 2
