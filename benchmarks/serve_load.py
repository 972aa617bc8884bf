#!/usr/bin/env python3
"""``ringfire serve`` under load, against the same work in-process, in one run.

Starts a real server (uvicorn on 127.0.0.1, its own process) for the digits MLP and CNN of
the test suite (client-aided ReLU, batch packing, 64 images per request), then:

* key upload: the relinearization key of N16_D30 (43.1 MB; ``--key-preset N16_BOOT``: with
  its bootstrapping keys, 3.1 GB) through the chunked,
  resumable protocol, MB/s on loopback end to end (from the session's creation) and for the
  transfer alone (after the client hashed the key, where it hashes it first: a new tenant's
  keys are hashed as they are sent), and the client's and server's peak memory;
* throughput: ``--clients`` client threads, each ``--requests`` inferences, requests/s and
  p50/p99 latency, against the same inferences run in-process, one after the other and
  one per core at once (threads of one process, each on one kernel thread: the most
  in-process reaches on these cores), half of each before the service's and half after
  (the machine's drift weighs on all alike);
* health: ``GET /v2/health/live`` latency every ``--health-every`` seconds (0.02) while the
  inferences run (p50/p99). Each probe costs CPU on both sides (0.8 ms of the server's and 1.3
  ms of the prober's, idle, on a 2-vCPU Zen 3), charged to the service; probes every 0.1 s
  instead changed no rate beyond the host's spread (2026-12-04, three runs each way);
* the server's resident memory over the run (from ``/metrics``);
* CPU per request: of the in-process run, and of the clients and the server while the
  service's requests ran, with the cores they kept busy (Linux ``/proc``), and the server's
  by what its threads do (``ringfire_thread_cpu_seconds_total``: the event loop, request
  threads, job workers, the kernels' pool).

``--server-cpus 0``: the server on core 0 alone, the clients (and the key uploads' client) on
the other cores, the in-process runs on core 0: what a server's cores serve when its clients run on their own machines, against
what the same cores reach in-process, the key holder's work included (the default layout sets
both sides of the service on all cores against in-process on all of them).

``--server-device cuda``: the server computes on the GPU (``ringfire serve --device cuda``), and
so do the in-process runs (a ``device="cuda"`` context); the clients' keys, encryptions and
decryptions stay on the host either way.

``--retain-freed-mib`` (default 64, the server's own default) is passed to the server and
applied to this process, whose clients and in-process run share it
(``ringfire.memory.retain_freed``); 0 leaves the C library's thresholds on both sides.

Every result is decrypted and compared with onnxruntime. Bounded: clients x requests
inferences. Needs ``pip install 'ringfire[serve]'``; a few GiB of memory.

    python benchmarks/serve_load.py [--clients 4] [--requests 5] [--keys-only [--key-preset N16_BOOT] [--uploads 7]]
        [--retain-freed-mib 64] [--server-cpus 0] [--health-every 0.02] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import nn_models as M  # noqa: E402
from serve_support import confined_to, free_port, kernel_threads, process_cpu_s, server_process  # noqa: E402
from nn_scale import PeakSampler  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.memory_guard import proc_memory  # noqa: E402
from ringfire.serve import Client  # noqa: E402
from ringfire.serve.auth import add_token  # noqa: E402


def percentile(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


def server_rss(url: str, http=None) -> float:
    """The server's resident memory from ``/metrics``; ``http``: an open httpx client to ask it
    with (a new one per call sets up a TLS context: about 31 ms of CPU on a 2-vCPU Zen 3,
    charged to the service's side of the run while it probes twice a second)."""
    import httpx
    for line in (http or httpx).get(f"{url}/metrics").text.splitlines():
        if line.startswith("ringfire_resident_memory_bytes"):
            return float(line.split()[-1])
    return float("nan")


def server_thread_cpu(url: str) -> dict[str, float]:
    """The server's CPU seconds so far by its threads' role (``ringfire_thread_cpu_seconds_total``)."""
    import httpx
    out = {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("ringfire_thread_cpu_seconds_total{"):
            role = line.split('role="', 1)[1].split('"', 1)[0]
            out[role] = float(line.split()[-1])
    return out


class ServerPeak:
    """Another process's most resident memory above what it held at the start, sampled from
    /proc every 2 ms while the block runs (this process's own peak is PeakSampler's, which
    reads the kernel's high-water mark; another process's mark cannot be reset, so this
    samples)."""

    def __init__(self, pid: int):
        self.pid, self.extra_mib, self._done = pid, None, threading.Event()

    def _rss(self) -> int:
        return proc_memory("VmRSS", pid=self.pid).get("VmRSS", 0)

    def _watch(self) -> None:
        while not self._done.wait(0.002):
            self._peak = max(self._peak, self._rss())

    def __enter__(self) -> "ServerPeak":
        self._base = self._peak = self._rss()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self.extra_mib = (max(self._peak, self._rss()) - self._base) / 2**20


def key_upload(workdir: pathlib.Path, preset: str = "N16_D30", server_options: tuple = (), uploads: int = 1,
               server_cpus: set[int] | None = None) -> dict:
    """The evaluation keys a small model needs, through the upload protocol of a server for
    `preset`: the relinearization key (43.1 MB at N16_D30), and for a preset that bootstraps
    (N16_BOOT) the bootstrapping keys too, the model then served with polynomial activations.
    With `uploads` > 1, that many more key sets follow on the same (then warm) server, each of
    a tenant of its own (a new tenant's keys are hashed as they are sent: nothing it stores
    could be linked), the background check of the one before given 1.5 s to end; ``uploads``
    in the result has each one's timings, the first one's the fields beside it. With
    `server_cpus`, the server runs on those cores alone and this process on the others."""
    model = workdir / "tiny.onnx"
    model.write_bytes(M.mlp_bytes((16, 4)))
    tokens = [add_token(workdir / "tokens-keys", f"bench{i}") for i in range(max(1, uploads))]
    port = free_port()
    args = [str(model), "--store", str(workdir / "store-keys"), "--tokens", str(workdir / "tokens-keys"),
            "--preset", preset, *server_options]
    bootstraps = bool(rf.ckks.PRESETS[preset].get("bootstrap"))
    if bootstraps:
        np.save(workdir / "calibration.npy", np.random.default_rng(0).uniform(-1, 1, (64, 16)))
        args += ["--activation", "poly", "--calibration", str(workdir / "calibration.npy")]
    client_cpus = None if server_cpus is None else set(os.sched_getaffinity(0)) - server_cpus
    with server_process(args, port, server_cpus) as server, confined_to(client_cpus):
        url = f"http://127.0.0.1:{port}"
        out, each = None, []
        for token in tokens:
            with Client(url, token, chunk_bytes=16 * 2**20) as client:
                ctx = client.context("tiny")
                sk, keys = ctx.keygen(bootstrap=bootstraps)
                if out is not None:
                    time.sleep(1.5)  # the server's check of the last key set, off its upload's path, ends first
                client_base = PeakSampler.rss()
                with PeakSampler(0.01) as client_peak, ServerPeak(server.pid) as server_peak:
                    start = time.perf_counter()
                    session = client.session("tiny", ctx, sk, keys, progress=False)
                    seconds = time.perf_counter() - start
                timings = session.upload_timings  # per kind: the client's hashing (if first), then the transfer
                size = sum(t["bytes"] for t in timings.values())
                prepare, transfer = (sum(t[k] for t in timings.values()) for k in ("prepare_s", "transfer_s"))
                each.append({"seconds": seconds, "mb_per_s": size / seconds / 1e6, "prepare_s": prepare,
                             "transfer_s": transfer})
                if out is not None:
                    continue
                client_extra = ((client_peak.peak_rss_hwm or client_peak.peak_rss) - client_base) / 2**20
                server_mem = server_rss(url)
                relinked = time.perf_counter()
                again = client.session("tiny", ctx, sk, keys, progress=False)  # the same keys: linked
                relinked = time.perf_counter() - relinked
                out = {"preset": preset, "kinds": {k: t["bytes"] for k, t in timings.items()}, "bytes": size,
                       "seconds": seconds, "mb_per_s": size / seconds / 1e6, "prepare_s": prepare,
                       "transfer_s": transfer, "transfer_mb_per_s": size / transfer / 1e6,
                       "client_extra_peak_mib": client_extra, "server_extra_peak_mib": server_peak.extra_mib,
                       "server_rss_mib": server_mem / 2**20,
                       "second_session": again.upload_keys(progress=False), "second_session_s": relinked,
                       "first_session": "uploaded", "server_cpus": sorted(server_cpus) if server_cpus else None}
        out["uploads"] = each
        if len(each) > 1:
            out["warm_median_mb_per_s"] = float(np.median([u["mb_per_s"] for u in each[1:]]))
        return out


def throughput(name: str, onnx_bytes: bytes, x: np.ndarray, clients: int, requests: int, workdir,
               server_options: tuple = (), server_cpus: set[int] | None = None, health_every: float = 0.02,
               device: str = "cpu") -> dict:
    """With ``server_cpus``, the server runs on those cores alone and the clients on the others,
    as a deployment's clients run on their own machines; the in-process runs get the server's
    cores (the rate the same cores reach with the key holder's work in the same process)."""
    path = workdir / f"{name}.onnx"
    path.write_bytes(onnx_bytes)
    tokens = {f"t{i}": add_token(workdir / f"tokens-{name}", f"t{i}") for i in range(clients)}
    port = free_port()
    args = [str(path), "--store", str(workdir / f"store-{name}"), "--tokens", str(workdir / f"tokens-{name}"),
            "--preset", "N13_D2", "--requests-per-second", "1000", "--queue", str(4 * clients), "--device", device,
            *server_options]
    ref = M.ort_run(onnx_bytes, x)
    out = {"model": name, "images_per_request": len(x), "clients": clients, "requests_per_client": requests,
           "server_cpus": sorted(server_cpus) if server_cpus else None, "health_every_s": health_every,
           "device": device}
    client_cpus = None if server_cpus is None else set(os.sched_getaffinity(0)) - server_cpus
    if client_cpus is not None and (not client_cpus or not server_cpus <= os.sched_getaffinity(0)):
        raise SystemExit(f"--server-cpus {sorted(server_cpus)}: the clients need a core of their own "
                         f"among {sorted(os.sched_getaffinity(0))}")
    cores = len(server_cpus) if server_cpus else len(os.sched_getaffinity(0))
    # In-process: the same inferences, encrypted the way rf.serve.Client does, one after the other
    # (each with the kernels' threads) and one per core at once (threads of this process, each
    # request's kernels on one thread: overlapping requests keep the cores busier than one
    # request's parallel loops; the highest in-process rate measured on these cores).
    ctx = rf.ckks.Context.preset("N13_D2", device=device)
    model = rf.nn.load(onnx_bytes, ctx)
    sk, keys = ctx.keygen()
    local = rf.nn.LocalClient(ctx, sk, keys)
    runs = {"in_process": {"times": [], "walls": [], "cpu": [], "errors": []},
            "in_process_concurrent": {"times": [], "walls": [], "cpu": [], "errors": []}}

    def infer_here(into):
        start = time.perf_counter()
        level = rf.nn.client.encryption_level(ctx, model.input_level, x)
        got = ctx.decrypt_batch(model(ctx.encrypt_batch(x, sk, level=level), client=local), sk)
        into["times"].append(time.perf_counter() - start)
        into["errors"].append(float(np.max(np.abs(got - ref))))

    def in_process(count, at_once):
        into = runs["in_process" if at_once == 1 else "in_process_concurrent"]
        one_at_a_time_threads = cores if server_cpus else rf.num_threads()
        with confined_to(server_cpus), kernel_threads(1 if at_once > 1 else one_at_a_time_threads):
            started, wall = time.process_time(), time.perf_counter()
            threads = [threading.Thread(target=lambda n: [infer_here(into) for _ in range(n)],
                                        args=(count // at_once + (i < count % at_once),)) for i in range(at_once)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            into["walls"].append(time.perf_counter() - wall)
            into["cpu"].append(time.process_time() - started)

    def summary(r):
        n = len(r["times"])
        return {"requests_per_s": n / sum(r["walls"]), "p50_s": percentile(r["times"], 50),
                "p99_s": percentile(r["times"], 99), "cpu_ms_per_request": 1e3 * sum(r["cpu"]) / n,
                "max_abs_error": max(r["errors"])}

    # Half of each in-process run before the service's, half after, nested around it: a steady
    # drift of this shared machine's speed during the run then weighs on all three alike.
    first, second = clients * requests // 2, clients * requests - clients * requests // 2
    out["in_process_at_once"] = cores
    in_process(first, 1)
    if cores > 1:  # on one core, "at once" is one at a time
        in_process(first, cores)
    with server_process(args, port, server_cpus) as server, confined_to(client_cpus):
        url = f"http://127.0.0.1:{port}"
        sessions = []
        for tenant, token in tokens.items():
            client = Client(url, token)
            sessions.append(client.session(name, progress=False))
        latencies, errors, health, rss = [], [], [], []
        done = threading.Event()

        def watch():
            import httpx
            with httpx.Client() as h:
                while not done.is_set():
                    start = time.perf_counter()
                    h.get(f"{url}/v2/health/live")
                    health.append(time.perf_counter() - start)
                    if len(health) % max(1, round(0.5 / health_every)) == 0:  # about twice a second
                        rss.append(server_rss(url, h))
                    time.sleep(health_every)

        def work(session):
            for _ in range(requests):
                start = time.perf_counter()
                got = session.infer(x, progress=False)
                latencies.append(time.perf_counter() - start)
                errors.append(float(np.max(np.abs(got - ref))))

        watcher = threading.Thread(target=watch)
        watcher.start()
        # The clients' requests overlap, as the in-process ones at once do: their kernels on one
        # thread each likewise (the server keeps its own defaults).
        with kernel_threads(1):
            roles = server_thread_cpu(url)
            server_cpu, client_cpu = process_cpu_s(server.pid), time.process_time()
            start = time.perf_counter()
            threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - start
        # CPU of both sides while the clients ran (this process's includes the health checks).
        server_cpu, client_cpu = process_cpu_s(server.pid) - server_cpu, time.process_time() - client_cpu
        roles = {role: seconds - roles.get(role, 0.0) for role, seconds in server_thread_cpu(url).items()}
        done.set()
        watcher.join()
        for s in sessions:
            s.client.close()
    if cores > 1:
        in_process(second, cores)
    in_process(second, 1)
    out["in_process"] = summary(runs["in_process"])
    out["in_process_concurrent"] = summary(runs["in_process_concurrent"]) if cores > 1 else out["in_process"]
    out["service"] = {"requests_per_s": len(latencies) / wall, "p50_s": percentile(latencies, 50),
                      "p99_s": percentile(latencies, 99), "max_abs_error": max(errors),
                      "health_p50_ms": 1e3 * percentile(health, 50), "health_p99_ms": 1e3 * percentile(health, 99),
                      "health_max_ms": 1e3 * max(health), "server_rss_mib_max": max(rss) / 2**20 if rss else None,
                      "server_cpu_ms_per_request": 1e3 * server_cpu / len(latencies),
                      "client_cpu_ms_per_request": 1e3 * client_cpu / len(latencies),
                      "server_cpu_ms_per_request_by_role": {role: 1e3 * seconds / len(latencies)
                                                            for role, seconds in roles.items()},
                      "cores_busy": (server_cpu + client_cpu) / wall}
    out["throughput_ratio"] = out["service"]["requests_per_s"] / out["in_process"]["requests_per_s"]
    out["throughput_ratio_concurrent"] = out["service"]["requests_per_s"] / out["in_process_concurrent"]["requests_per_s"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--skip-keys", action="store_true")
    ap.add_argument("--keys-only", action="store_true", help="the key upload alone")
    ap.add_argument("--uploads", type=int, default=1, help="key sets uploaded, each by a new tenant (more than one: "
                    "the rest on a warm server, their median reported)")
    ap.add_argument("--key-preset", default="N16_D30",
                    help="the preset whose keys are uploaded (N16_BOOT: its 3.1 GB of bootstrapping keys too)")
    ap.add_argument("--models", default="mlp,cnn", help="which of mlp,cnn to run (default both)")
    ap.add_argument("--retain-freed-mib", type=int, default=64,
                    help="freed buffers the C library keeps mapped, here and in the server (0: its defaults)")
    ap.add_argument("--server-cpus", help="cores the server runs on alone (e.g. 0), the clients on the others, "
                    "and the in-process runs on the server's: a deployment's view, its clients elsewhere")
    ap.add_argument("--health-every", type=float, default=0.02, help="seconds between health probes during the run")
    ap.add_argument("--server-device", default="cpu", help="where the server and the in-process runs compute: cpu, "
                    "cuda or cuda:N (ringfire serve --device)")
    ap.add_argument("--json")
    args = ap.parse_args()
    server_cpus = {int(c) for c in args.server_cpus.split(",")} if args.server_cpus else None
    server_options = ("--retain-freed-mib", str(args.retain_freed_mib))
    if args.retain_freed_mib:
        rf.memory.retain_freed(args.retain_freed_mib * 2**20)
    results = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "retain_freed_mib": args.retain_freed_mib}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        if not args.skip_keys:
            results["key_upload"] = key_upload(workdir, args.key_preset, server_options, args.uploads, server_cpus)
            up = results["key_upload"]
            how = (f"hashes it in {up['prepare_s']:.3f} s, then sends it" if up["prepare_s"] else
                   "hashes it as it sends it, named with its last chunk, and sends it")
            print(f"key upload ({', '.join(up['kinds'])}): {up['bytes'] / 2**20:.1f} MiB at {up['mb_per_s']:.0f} MB/s end to end (the client "
                  f"{how} at {up['transfer_mb_per_s']:.0f} "
                  "MB/s until the server kept it); memory above its start during the upload: client "
                  f"{up['client_extra_peak_mib'] or 0:.0f} MiB, server {up['server_extra_peak_mib'] or 0:.0f} MiB; "
                  f"a second session with the same keys opened in {1e3 * up['second_session_s']:.1f} ms",
                  file=sys.stderr)
            if "warm_median_mb_per_s" in up:
                print(f"then {len(up['uploads']) - 1} more on the warm server: "
                      f"{', '.join(str(round(u['mb_per_s'])) for u in up['uploads'][1:])} MB/s "
                      f"(median {up['warm_median_mb_per_s']:.0f})", file=sys.stderr)
        results["runs"] = []
        for name in [] if args.keys_only else [n for n in ("mlp", "cnn") if n in args.models.split(",")]:
            onnx_bytes, x = M.served_digits_model(name, args.images)
            r = throughput(name, onnx_bytes, x, args.clients, args.requests, workdir, server_options, server_cpus,
                           args.health_every, args.server_device)
            results["runs"].append(r)
            where = f" (server on cores {r['server_cpus']}, clients on the others)" if r["server_cpus"] else ""
            where += f" (computing on {r['device']})" if r["device"] != "cpu" else ""
            print(f"{name}{where}: service {r['service']['requests_per_s']:.2f} req/s vs in-process "
                  f"{r['in_process']['requests_per_s']:.2f} one at a time ({100 * r['throughput_ratio']:.0f} %) and "
                  f"{r['in_process_concurrent']['requests_per_s']:.2f} {r['in_process_at_once']} at once "
                  f"({100 * r['throughput_ratio_concurrent']:.0f} %), p99 "
                  f"{r['service']['p99_s']:.2f} s, health p99 {r['service']['health_p99_ms']:.1f} ms; CPU per request: "
                  f"in-process {r['in_process']['cpu_ms_per_request']:.1f} / "
                  f"{r['in_process_concurrent']['cpu_ms_per_request']:.1f} ms, service "
                  f"{r['service']['client_cpu_ms_per_request']:.1f} client + {r['service']['server_cpu_ms_per_request']:.1f} "
                  f"server ({r['service']['cores_busy']:.2f} cores busy; the server's by thread: " +
                  ", ".join(f"{role} {ms:.1f}" for role, ms in r['service']['server_cpu_ms_per_request_by_role'].items()) +
                  ")", file=sys.stderr)
    print(json.dumps(results, indent=2))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
