#!/usr/bin/env python3
"""The least a service adds to an inference: the transport's own work, against the same request
in-process.

When the key holder and the server are two processes, every ciphertext that crosses between
them is serialized once, its bytes go through a socket, and it is loaded once on the other side
(a seeded ciphertext's uniform half expanded from its seed). No service can do less; HTTP,
framing and Python come on top. This benchmark times exactly that work for the digits MLP and
CNN of ``serve_load.py`` (N13_D2, client-aided ReLU, batch packing, 64 images a request), with
no HTTP at all:

* the ciphertexts of one request, captured from an in-process run: the encrypted input, every
  client-aided round's question and answer, the result; each group serialized (``to_bytes``)
  and loaded (``ctx.load``), best of several passes, CPU time of the process;
* a loopback TCP socket between two processes: CPU per MB of the sender and the receiver;
* the in-process request itself (encrypt, the model with its rounds, decrypt) over
  ``--requests`` requests: its wall time with the default threads (the rates ``serve_load.py``
  sets the service against: one request at a time, and as many at once as there are cores),
  and its CPU with the default threads (the thread pool's waits included) and with one
  thread (the work alone).

When client and server share the machine's cores, the service can at best keep every core busy
with the work alone and the floor: its rate is then at most cores / (work + floor), and its
share of the in-process rate at most that divided by the in-process rate: the ceiling this
prints, for a service whose HTTP, framing and Python cost nothing, against the in-process rate
one request at a time and with one request per core at once (threads of one process, each
request's kernels on one thread: overlapping requests keep the cores busier than one
request's parallel loops do). Bounded: a few
dozen inferences per model.

    python benchmarks/serve_floor.py [--models mlp,cnn] [--requests 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import socket
import sys
import threading
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import nn_models as M  # noqa: E402
from serve_support import kernel_threads, process_cpu_s  # noqa: E402

import ringfire as rf  # noqa: E402


class RecordingClient(rf.nn.LocalClient):
    """The in-process key holder, keeping the ciphertexts of the last request's rounds."""

    def __init__(self, *args):
        super().__init__(*args)
        self.questions, self.answers = [], []

    def apply(self, node, x, shape, clip):
        out = super().apply(node, x, shape, clip)
        self.questions += list(x.flat)
        self.answers += [c for c in out[0].flat if c is not None and not isinstance(c, float)]
        return out


def best_cpu(fn, passes: int = 7) -> float:
    """The least process CPU seconds of `passes` calls of ``fn``."""
    times = []
    for _ in range(passes):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def loopback_cpu_per_mb(megabytes: int = 200) -> dict:
    """CPU seconds per MB of a sender and a receiver process on a loopback TCP socket."""
    piece = os.urandom(1 << 20)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        pid = os.fork()
        if pid == 0:  # the sender
            with socket.create_connection(server.getsockname()) as out:
                for _ in range(megabytes):
                    out.sendall(piece)
            os._exit(0)
        conn, _ = server.accept()
        buf, got, start = bytearray(1 << 20), 0, time.process_time()
        with conn:
            while n := conn.recv_into(buf):
                got += n
        receiver = time.process_time() - start
    sender = process_cpu_s(pid)  # the sender has exited: its CPU until then
    os.waitpid(pid, 0)
    mb = got / 1e6
    return {"sender_s_per_mb": sender / mb, "receiver_s_per_mb": receiver / mb}


def floor(name: str, onnx_bytes: bytes, x: np.ndarray, requests: int, socket_cost: dict) -> dict:
    ctx = rf.ckks.Context.preset("N13_D2")
    model = rf.nn.load(onnx_bytes, ctx)
    sk, keys = ctx.keygen()
    holder = RecordingClient(ctx, sk, keys)
    level = rf.nn.client.encryption_level(ctx, model.input_level, x)

    def request():
        holder.questions, holder.answers = [], []
        enc = ctx.encrypt_batch(x, sk, level=level)
        out = model(enc, client=holder)
        ctx.decrypt_batch(out, sk)
        return enc, out

    threads = rf.num_threads()
    timed = {}
    for label, n in (("default", threads), ("one_thread", 1)):
        with kernel_threads(n):
            for _ in range(2):
                request()
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(requests):
                request()
            timed[label] = ((time.process_time() - cpu) / requests, (time.perf_counter() - wall) / requests)
    # The same requests one per core at once (threads of this process, each request's kernels
    # on one thread): the in-process rate when requests overlap, which serve_load.py sets the
    # service's concurrent clients against too.
    cores = len(os.sched_getaffinity(0))
    each = max(5, requests)
    with kernel_threads(1):
        pool = [threading.Thread(target=lambda: [request() for _ in range(each)]) for _ in range(cores)]
        wall = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        concurrent_rate = cores * each / (time.perf_counter() - wall)

    enc, out = request()
    groups = {"input (client to server)": list(enc.cts.flat), "round questions (server to client)": holder.questions,
              "round answers (client to server)": holder.answers, "result (server to client)": list(out.cts.flat)}
    rows, total_bytes, total_s = [], 0, 0.0
    for what, cts in groups.items():
        blobs = [ct.to_bytes() for ct in cts]
        save = best_cpu(lambda: [ct.to_bytes() for ct in cts])
        load = best_cpu(lambda: [ctx.load(b) for b in blobs])
        size = sum(map(len, blobs))
        rows.append({"what": what, "ciphertexts": len(cts), "bytes": size, "save_s": save, "load_s": load})
        total_bytes += size
        total_s += save + load
    wire_s = total_bytes / 1e6 * (socket_cost["sender_s_per_mb"] + socket_cost["receiver_s_per_mb"])
    least = total_s + wire_s
    work, wall = timed["one_thread"][0], timed["default"][1]
    return {"model": name, "images_per_request": len(x), "groups": rows, "bytes": total_bytes,
            "serialize_and_load_s": total_s, "socket_s": wire_s, "floor_s": least, "threads": threads,
            "in_process_wall_s": wall, "in_process_cpu_s": timed["default"][0], "work_cpu_s": work, "cores": cores,
            "ceiling": cores * wall / (work + least), "in_process_concurrent_per_s": concurrent_rate,
            "ceiling_concurrent": cores / (work + least) / concurrent_rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--json")
    args = ap.parse_args()
    rf.memory.retain_freed(64 * 2**20)  # as serve_load.py and ringfire serve run
    socket_cost = loopback_cpu_per_mb()
    results = {"socket": socket_cost, "models": []}
    print(f"loopback TCP: sender {1e3 * socket_cost['sender_s_per_mb']:.3f} ms/MB, receiver "
          f"{1e3 * socket_cost['receiver_s_per_mb']:.3f} ms/MB")
    for name in args.models.split(","):
        r = floor(name, *M.served_digits_model(name), args.requests, socket_cost)
        results["models"].append(r)
        print(f"\n{name}: per request, CPU ms")
        print(f"| {'crosses':36s} | cts | MB    | save  | load  |")
        for g in r["groups"]:
            print(f"| {g['what']:36s} | {g['ciphertexts']:3d} | {g['bytes'] / 1e6:5.2f} | {1e3 * g['save_s']:5.2f} | "
                  f"{1e3 * g['load_s']:5.2f} |")
        print(f"serialize and load {1e3 * r['serialize_and_load_s']:.1f} ms + socket {1e3 * r['socket_s']:.1f} ms = "
              f"floor {1e3 * r['floor_s']:.1f} ms")
        print(f"in-process: {1e3 * r['in_process_wall_s']:.1f} ms a request, CPU {1e3 * r['in_process_cpu_s']:.1f} ms "
              f"({r['threads']} threads), the work alone {1e3 * r['work_cpu_s']:.1f} ms (one thread)")
        print(f"ceiling on {r['cores']} shared cores: {100 * r['ceiling']:.0f} % of the in-process rate one request at a "
              f"time, {100 * r['ceiling_concurrent']:.0f} % of its rate with {r['cores']} at once "
              f"({r['in_process_concurrent_per_s']:.1f} a second; the floor is "
              f"{100 * r['floor_s'] / r['work_cpu_s']:.0f} % of the work)")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
