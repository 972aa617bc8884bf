#!/usr/bin/env python3
"""One client's inference latency through ``ringfire serve`` over a link with round trips:
replies that carry their round and result (``inline``, two requests for the digits MLP's
inference with one client-aided round) against replies that only announce them (four).

A real server (its own process) on 127.0.0.1 behind ``latency_proxy.py``, which delays every
byte by ``--delay-ms`` each way; one client, one inference after another, the two ways
alternating in rounds (the machine's drift weighs on both alike). Every result is decrypted
and compared with onnxruntime. Bounded: delays x rounds x 2 x ``--requests`` inferences.

    python benchmarks/serve_latency.py [--delays 0,10] [--rounds 3] [--requests 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import nn_models as M  # noqa: E402
from serve_support import free_port, server_process  # noqa: E402

from ringfire.serve import Client  # noqa: E402
from ringfire.serve.auth import add_token  # noqa: E402


@contextlib.contextmanager
def delayed_link(to: int, delay_ms: float):
    """A port whose bytes reach port ``to`` (and come back) ``delay_ms`` later each way."""
    port = free_port()
    proxy = subprocess.Popen([sys.executable, str(HERE / "latency_proxy.py"), "--listen", str(port),
                              "--to", str(to), "--delay-ms", str(delay_ms)])
    import httpx
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v2/health/live", timeout=2)
            break
        except httpx.TransportError:
            if proxy.poll() is not None or time.monotonic() > deadline:
                proxy.kill()
                raise RuntimeError("the latency proxy did not start")
            time.sleep(0.1)
    try:
        yield port
    finally:
        proxy.kill()
        proxy.wait(timeout=10)


def counted(client: Client) -> list:
    """Counts the HTTP requests ``client`` sends (into the returned list's one element)."""
    count = [0]
    send = client.http.send

    def counting(*args, **kwargs):
        count[0] += 1
        return send(*args, **kwargs)
    client.http.send = counting
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delays", default="0,10", help="one-way delays in ms, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=10, help="inferences each way, each round")
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--json")
    args = ap.parse_args()
    x_train, y_train, x_test, _ = M.digits_split()
    onnx_bytes = M.mlp_onnx(M.mlp_train(x_train, y_train))
    x = x_test[:args.images]
    ref = M.ort_run(onnx_bytes, x)
    results = {"date": time.strftime("%Y-%m-%d"), "model": "digits MLP", "images_per_request": len(x),
               "command": "python benchmarks/serve_latency.py " + " ".join(sys.argv[1:]), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        (work / "mlp.onnx").write_bytes(onnx_bytes)
        token = add_token(work / "tokens", "t0")
        port = free_port()
        serve = [str(work / "mlp.onnx"), "--store", str(work / "store"), "--tokens", str(work / "tokens"),
                 "--preset", "N13_D2", "--requests-per-second", "1000"]
        with server_process(serve, port):
            for delay in map(float, args.delays.split(",")):
                with delayed_link(port, delay) as link:
                    client = Client(f"http://127.0.0.1:{link}", token)
                    session = client.session("mlp", progress=False)
                    sent = counted(client)
                    session.infer(x, progress=False)  # warm: connections, the server's first job
                    by_way = {True: [], False: []}
                    requests = {True: 0, False: 0}
                    for _ in range(args.rounds):
                        for inline in (True, False):
                            session.inline = inline
                            before = sent[0]
                            for _ in range(args.requests):
                                start = time.perf_counter()
                                got = session.infer(x, progress=False)
                                by_way[inline].append(time.perf_counter() - start)
                                assert np.max(np.abs(got - ref)) < 1e-3, "a wrong result"
                            requests[inline] += sent[0] - before
                    client.close()
                run = {"delay_ms_each_way": delay}
                for inline, name in ((True, "inline"), (False, "announced")):
                    t = sorted(by_way[inline])
                    run[name] = {"p50_ms": 1e3 * t[len(t) // 2], "mean_ms": 1e3 * sum(t) / len(t),
                                 "min_ms": 1e3 * t[0], "max_ms": 1e3 * t[-1],
                                 "requests_per_inference": requests[inline] / len(t)}
                results["runs"].append(run)
                print(f"{delay:g} ms each way: inline p50 {run['inline']['p50_ms']:.1f} ms "
                      f"({run['inline']['requests_per_inference']:.1f} requests), announced p50 "
                      f"{run['announced']['p50_ms']:.1f} ms ({run['announced']['requests_per_inference']:.1f})",
                      file=sys.stderr)
    print(json.dumps(results, indent=2))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
