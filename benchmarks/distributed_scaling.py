#!/usr/bin/env python3
"""Encrypted inference on a Ray cluster: measured on 1 and 2 worker nodes of one core each
(the most this machine has, with a head node for the driver), against the cost model's
prediction from a one-core profile of the same run, then the model's projection to 4-64
nodes of 2 and 16 cores at 1 and 10 Gb/s. Every distributed result is checked bit for bit
against the in-process run.

Workloads (batch packing):
- ``cnn``: the digits CNN (client-aided ReLU and MaxPool), 360 images, N = 2^13;
- ``resnet8``: ResNet-20 on 8x8x3 inputs (ringfire.nn.zoo, random weights, client-aided),
  256 images, seed 001's N = 2^12;
- ``boot``: the digits MLP 64-16-16-10 with polynomial activations and bootstrapping, no
  client, on the toy ring (N = 2^12, NOT SECURE: only its ratios mean anything).

Workload (inter packing, one image per ciphertext and per task: the "requests/images" shape):
- ``resnet8inter``: ResNet-20 on 8x8x3 inputs with polynomial activations and bootstrapping
  (19 bootstraps an image), no client, 8 images, on the same toy ring. Every run loads the model
  afresh (a fresh deterministic context, for the bit-for-bit check), so every worker encodes the
  model's diagonals on its first image of each run; the cost model counts that once per worker
  (``Stage.setup_seconds``).

Each configuration runs once to warm up (keys to the nodes, workers started), then ``--repeats``
times (default: 3 where the in-process run takes under a minute, else 1); the median is reported
beside every run, and each map's wall time beside the cost
model's share for it (the stages where the two differ most are printed).

    python benchmarks/distributed_scaling.py [--workloads cnn,resnet8,boot,resnet8inter] [--repeats N]
                                             [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
import warnings

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # every Ray address on 127.0.0.1

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import nn_models as M  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.distributed import costmodel  # noqa: E402
from ringfire.nn import zoo  # noqa: E402

MiB = 2**20
SEED = bytes(range(32))


def quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def workloads(names):
    x_train, y_train, x_test, _ = M.digits_split()
    if "cnn" in names:
        cnn = M.cnn_onnx(M.cnn_train(x_train.reshape(-1, 1, 8, 8), y_train, pool="max"), pool="max")
        yield "digits CNN, 360 images", cnn, x_test.reshape(-1, 1, 8, 8), \
            dict(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40, special_bits=[60]), {}
    if "resnet8" in names:
        resnet = zoo.resnet20(8)[0].SerializeToString()
        yield "ResNet-20 8x8, 256 images", resnet, np.random.default_rng(0).uniform(0, 1, (256, 3, 8, 8)), \
            dict(poly_degree=2**12, coeff_bits=[30, 22, 22], scale_bits=22, special_bits=[30]), {}
    toy = dict(rf.ckks.PRESETS["N12_BOOT_INSECURE"])
    toy.update(coeff_bits=[60] + [40] * 6 + [45] * 3 + [60] * 11 + [56] * 3, dnum=8)
    if "boot" in names:
        deep, _ = M.deep_mlp_onnx(x_train, y_train, hidden=(16, 16))
        yield "bootstrapped MLP 64-16-16-10, 64 images (toy ring, NOT SECURE)", deep, x_test[:64], toy, \
            {"activation": "poly", "calibration": x_train}
    if "resnet8inter" in names:
        resnet = zoo.resnet20(8)[0].SerializeToString()
        images = np.random.default_rng(0).uniform(0, 1, (8, 3, 8, 8))
        calibration = np.random.default_rng(1).uniform(0, 1, (64, 3, 8, 8))
        yield "ResNet-20 8x8 one image per ciphertext, bootstrapped, 8 images (toy ring, NOT SECURE)", resnet, \
            images, toy, {"activation": "poly", "calibration": calibration, "packing": "inter"}


def runner(onnx_bytes, x, ctx_options, load_options):
    """A function of an executor that runs the workload from a fresh deterministic context
    (so every run's bits can be compared) and returns (seconds, output bytes, model, enc, client)."""
    def run(executor, record=False):
        ctx = quiet(lambda: rf.ckks.Context(**ctx_options, insecure_deterministic_seed=SEED))
        model = rf.nn.load(onnx_bytes, ctx, **load_options)
        sk, keys = ctx.keygen(bootstrap=model.bootstrap, rotations=model.rotations())
        client = rf.nn.LocalClient(ctx, sk, keys)
        enc = ctx.encrypt_batch(x, keys, packing=model.packing)
        if executor is not None:  # as a server does when a session's keys arrive: not in the timed run
            executor.publish_keys(ctx, keys)
        if record:
            return costmodel.record(model, enc, client)
        start = time.perf_counter()
        out = quiet(lambda: model(enc, client=client, executor=executor))
        return time.perf_counter() - start, [None if c is None else c.to_bytes() for c in out.cts.flat]
    return run


def measure_link(ray) -> dict:
    """The loopback's effective bandwidth through Ray's object store (a 64 MiB object put by the
    driver, read by a task on a worker node and sent back, as a map's inputs and results travel:
    twice its bytes over the round trip's time) and a task's round-trip overhead."""
    @ray.remote(num_cpus=1)
    def echo(blob):
        return bytes(blob)

    @ray.remote(num_cpus=1)
    def nothing():
        return None

    ray.get(nothing.remote())
    blob = np.random.default_rng(0).integers(0, 256, 64 * MiB, dtype=np.uint8).tobytes()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        assert len(ray.get(echo.remote(ray.put(blob)))) == len(blob)
        best = min(best, time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(30):
        ray.get(nothing.remote())
    return {"bandwidth_bytes_per_s": 2 * len(blob) / best, "task_overhead_s": (time.perf_counter() - start) / 30}


def measure_contention(ray) -> float:
    """How many times longer a one-core task computes while another runs beside it on this
    machine (the two worker nodes share it): a fixed piece of ringfire work (rotations at
    N = 2^13), timed inside the task, alone on one node, then on both nodes at once."""
    @ray.remote(num_cpus=1)
    def work():
        from ringfire import _core
        _core.set_num_threads(1)
        ctx = quiet(lambda: rf.ckks.Context(poly_degree=2**13, coeff_bits=[50, 40, 40], scale_bits=40,
                                            special_bits=[60], insecure_deterministic_seed=SEED))
        sk, keys = ctx.keygen(rotations=[1])
        ct = ctx.encrypt(np.ones(8), keys)
        ct.rotate(1)
        start = time.perf_counter()
        for _ in range(200):
            ct.rotate(1)
        return time.perf_counter() - start

    alone = statistics.median(ray.get(work.remote()) for _ in range(3))
    together = statistics.median(t for _ in range(3) for t in ray.get([work.remote(), work.remote()]))
    return together / alone


def stage_table(predicted: list, runs: list) -> list:
    """Each map's median wall time over the runs beside the cost model's share for it."""
    if any(len(maps) != len(predicted) for maps in runs):
        return []  # a run made other maps than the profile: nothing to pair
    return [{"label": p["label"], "predicted": p["seconds"],
             "measured": statistics.median(maps[k][3] for maps in runs)} for k, p in enumerate(predicted)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="cnn,resnet8,boot,resnet8inter")
    ap.add_argument("--repeats", type=int, help="timed runs per configuration, the median reported (default: 3 "
                    "where the in-process run takes under a minute, else 1)")
    ap.add_argument("--json")
    args = ap.parse_args()
    import ray
    from ray.cluster_utils import Cluster
    results = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 1024 * MiB})
        cluster.add_node(num_cpus=1, object_store_memory=1024 * MiB, env_vars={"RINGFIRE_KEY_CACHE": f"{tmp}/n0"})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
        link = measure_link(ray)
        results["link"] = link
        print(f"loopback through the object store: {link['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s, task overhead "
              f"{1e3 * link['task_overhead_s']:.1f} ms", file=sys.stderr)
        runs = []
        for name, onnx_bytes, x, ctx_options, load_options in workloads(args.workloads.split(",")):
            run = runner(onnx_bytes, x, ctx_options, load_options)
            local_seconds, expected = run(None)
            profile = run(None, record=True)
            runs.append({"workload": name, "in_process_seconds": local_seconds, "profile": profile, "run": run,
                         "expected": expected, "measured": {}})
            print(f"{name}: in-process {local_seconds:.2f} s (both cores), one core {profile.total_seconds:.2f} s "
                  f"(serial {profile.serial_seconds:.2f} s)", file=sys.stderr)
        for nodes in (1, 2):
            if nodes == 2:
                cluster.add_node(num_cpus=1, object_store_memory=1024 * MiB,
                                 env_vars={"RINGFIRE_KEY_CACHE": f"{tmp}/n1"})
                cluster.wait_for_nodes()
                link["contention"] = measure_contention(ray)
                print(f"two tasks side by side on this machine: each computes {link['contention']:.2f}x as long",
                      file=sys.stderr)
            for r in runs:
                executor = rf.distributed.RayExecutor()
                r["run"](executor)  # keys to the nodes, workers started: the measured runs are warm
                times, maps = [], []
                for _ in range(args.repeats or (3 if r["in_process_seconds"] < 60 else 1)):
                    before = len(executor.stats["map_seconds"])
                    seconds, got = r["run"](executor)
                    assert got == r["expected"], f"{r['workload']}: the distributed result differs from the in-process one"
                    times.append(seconds)
                    maps.append(executor.stats["map_seconds"][before:])
                seconds = statistics.median(times)
                options = {"bandwidth": link["bandwidth_bytes_per_s"], "task_overhead": link["task_overhead_s"],
                           "contention": link.get("contention", 1.0)}
                predicted = costmodel.predict(r["profile"], nodes, 1, **options)
                stages = stage_table(predicted["stages"], maps)
                r["measured"][nodes] = {"seconds": seconds, "runs": times, "predicted": predicted,
                                        "stages": stages, "summary": executor.summary()}
                print(f"{r['workload']}: {nodes} worker node(s) {seconds:.2f} s (runs {', '.join(f'{t:.2f}' for t in times)}), "
                      f"predicted {predicted['total']:.2f} s ({100 * (predicted['total'] / seconds - 1):+.0f} %); "
                      f"maps {sum(s['measured'] for s in stages):.2f} s, predicted {sum(s['predicted'] for s in stages):.2f} s",
                      file=sys.stderr)
                for s in sorted(stages, key=lambda s: -abs(s["measured"] - s["predicted"]))[:3]:
                    print(f"    {s['label']}: {s['measured']:.3f} s, predicted {s['predicted']:.3f} s", file=sys.stderr)
        ray.shutdown()
        cluster.shutdown()
    for r in runs:
        m = r["measured"]
        row = {"workload": r["workload"], "in_process_seconds": r["in_process_seconds"],
               "one_core_seconds": r["profile"].total_seconds, "serial_seconds": r["profile"].serial_seconds,
               "bit_identical": True, "key_bundle_bytes": r["profile"].key_bytes,
               "measured": {k: {"seconds": v["seconds"], "runs": v["runs"], "stages": v["stages"],
                                "predicted_seconds": v["predicted"]["total"],
                                "predicted_parts": v["predicted"], "executor": v["summary"]} for k, v in m.items()},
               "measured_efficiency_2": m[1]["seconds"] / (2 * m[2]["seconds"]),
               "predicted_efficiency_2": m[1]["predicted"]["total"] / (2 * m[2]["predicted"]["total"]),
               "projection": [], "profile": r["profile"].to_dict()}
        for cores in (2, 16):
            for gbps in (1, 10):
                for nodes in (4, 8, 16, 64):
                    p = costmodel.predict(r["profile"], nodes, cores, bandwidth=gbps * 1.25e8,
                                          task_overhead=results["link"]["task_overhead_s"])
                    row["projection"].append({"nodes": nodes, "cores": cores, "gbps": gbps, "seconds": p["total"],
                                              "efficiency": costmodel.efficiency(
                                                  r["profile"], nodes, cores, bandwidth=gbps * 1.25e8,
                                                  task_overhead=results["link"]["task_overhead_s"])})
        results["runs"].append(row)
        print(f"{row['workload']}: efficiency at 2 workers measured {row['measured_efficiency_2']:.2f}, predicted "
              f"{row['predicted_efficiency_2']:.2f}", file=sys.stderr)
    text = json.dumps(results, indent=2, default=float)
    print(text)
    if args.json:
        pathlib.Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
