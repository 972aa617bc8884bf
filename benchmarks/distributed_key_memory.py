#!/usr/bin/env python3
"""Keys per node on Ray: one node, several worker processes, the key bundle's keys mapped from
key images (one copy per node) or loaded by every worker (``RayExecutor(map_keys=False)``).

    python benchmarks/distributed_key_memory.py [--preset N16_D30] [--rotations 8] [--workers 2]
        [--json out.json]

A real Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head without CPUs and one
worker node with ``workers`` CPUs, its own key cache). The driver makes the preset's
relinearization key and Galois keys of ``rotations`` power-of-two steps and runs
``rf.distributed.map`` over 4 x workers ciphertexts (a square, relinearized, then a rotation:
both keys used) once with mapped keys and once with loaded ones, each on a fresh node. Reported:
the node's workers' PSS summed (shared pages split between the processes that map them: what
the node holds), each worker's RssAnon and PSS, the map's time, and that the results decrypt
to NumPy's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

import ringfire as rf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from _common import cpu_model  # noqa: E402

GIB = 2**30


def square_and_rotate(ct):
    """Runs on the workers, with their keys: the relinearization key, then a Galois key."""
    return (ct * ct).rotate(1)


def run(map_keys: bool, ctx, sk, keys, workers: int, cache: str) -> dict:
    import ray
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 1 * GIB})
    cluster.add_node(num_cpus=workers, object_store_memory=1 * GIB, env_vars={"RINGFIRE_KEY_CACHE": cache})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
    try:
        x = np.linspace(-1, 1, ctx.slots)
        cts = [ctx.encrypt(x * (i + 1) / 8, keys) for i in range(4 * workers)]
        executor = rf.distributed.RayExecutor(map_keys=map_keys)
        start = time.perf_counter()
        out = rf.distributed.map(square_and_rotate, cts, executor=executor)
        seconds = time.perf_counter() - start
        worst = max(float(np.max(np.abs(ctx.decrypt(c, sk).real - np.roll((x * (i + 1) / 8) ** 2, -1))))
                    for i, c in enumerate(out))
        summary = executor.summary()
        node = next(iter(executor.stats["node_memory"].values()))
        return {"map_keys": map_keys, "seconds": round(seconds, 2), "max_error": worst,
                "keys_mapped": summary["keys_mapped"], "workers": len(node),
                "node_pss_gib": round(summary["peak_node_pss_bytes"] / GIB, 3),
                "per_worker": [{"pss_gib": round(m["pss"] / GIB, 3), "rss_anon_gib": round(m["rss_anon"] / GIB, 3)}
                               for m in node.values()]}
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="N16_D30")
    p.add_argument("--rotations", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    ctx = rf.ckks.Context.preset(args.preset)
    sk, keys = ctx.keygen(rotations=[1 << i for i in range(args.rotations)])
    key_bytes = keys.relin.nbytes + keys.galois.nbytes
    print(f"{args.preset}: relinearization and {args.rotations} Galois keys, {key_bytes / GIB:.3f} GiB expanded",
          flush=True)
    rows = []
    for map_keys in (True, False):
        with tempfile.TemporaryDirectory(prefix="ringfire-node-cache-") as cache:
            row = run(map_keys, ctx, sk, keys, args.workers, cache)
        rows.append(row)
        print(f"  keys {'mapped' if map_keys else 'loaded'}: {row['workers']} workers, node PSS "
              f"{row['node_pss_gib']:.3f} GiB; per worker RssAnon "
              f"{', '.join(str(w['rss_anon_gib']) for w in row['per_worker'])} GiB; {row['seconds']} s; "
              f"max error {row['max_error']:.1e}", flush=True)
    result = {"preset": args.preset, "rotations": args.rotations, "key_bytes": key_bytes, "cpu": cpu_model(),
              "date": time.strftime("%Y-%m-%d"), "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
