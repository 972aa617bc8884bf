#!/usr/bin/env python3
"""What the HTTP stack alone costs the service: the bytes of one inference moved through the
same server and client libraries, with routes that do nothing but read and write them.

``serve_floor.py`` times what any service must do (serialize, load, the socket); the service
itself (``serve_load.py``) adds HTTP, framing and Python on top. This benchmark splits that
top: a FastAPI app under uvicorn (httptools and uvloop, as ``ringfire serve`` runs, freed
buffers kept as the server keeps them) and an httpx client (1 MiB reads, the upload joined into
1 MiB blocks, as ``rf.serve.Client`` sends), exchanging exactly the requests of one inference of
the digits MLP or CNN (N13_D2, 64 images, client-aided ReLU, batch packing; sizes taken from an
in-process run): the submission with its input, answered with the first round's ciphertexts,
then each round's answer, answered with the next round or the result. The server runs on one
core and the client on another; CPU of each process per inference, over ``--requests``
inferences (bounded). What the service spends beyond this and the floor is its own code.

    python benchmarks/serve_stack.py [--models mlp,cnn] [--requests 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import nn_models as M  # noqa: E402
from serve_support import confined_to, free_port, process_cpu_s  # noqa: E402

import ringfire as rf  # noqa: E402

# The server: one route that reads the body as the service's routes do (Starlette's stream) and
# answers with `down` bytes in ciphertext-sized pieces (a streamed reply, as a round is sent).
SERVER = r"""
import os, sys
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, StreamingResponse
import ringfire as rf
rf.memory.retain_freed(64 * 2**20)
app = FastAPI()
piece = os.urandom(int(sys.argv[2]))

@app.get("/live")
def live():
    return PlainTextResponse("ok")

@app.post("/exchange")
async def exchange(request: Request, down: int):
    parts = []
    async for chunk in request.stream():
        parts.append(chunk)
    async def body():
        left = down
        while left > 0:
            yield piece[:min(left, len(piece))]
            left -= len(piece)
    return StreamingResponse(body(), media_type="application/octet-stream", headers={"Content-Length": str(down)})

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), loop="uvloop", http="httptools",
            log_level="warning", access_log=False)
"""


def exchanges(name: str) -> tuple[list[tuple[list[int], int]], int]:
    """The HTTP requests of one inference: (the sizes of the upload's ciphertexts, the bytes of
    the reply), and a ciphertext's size as sent back (a round's question)."""
    onnx, x = M.served_digits_model(name)
    ctx = rf.ckks.Context.preset("N13_D2")
    model = rf.nn.load(onnx, ctx)
    sk, keys = ctx.keygen()
    rounds = []

    class Recording(rf.nn.LocalClient):
        def apply(self, node, x, shape, clip):
            out = super().apply(node, x, shape, clip)
            rounds.append(([len(c.to_bytes()) for c in x.flat],
                           [len(c.to_bytes()) for c in out[0].flat if c is not None and not isinstance(c, float)]))
            return out

    enc = ctx.encrypt_batch(x, sk, level=rf.nn.client.encryption_level(ctx, model.input_level, x))
    out = model(enc, client=Recording(ctx, sk, keys))
    result = sum(len(c.to_bytes()) for c in out.cts.flat)
    ups = [[len(c.to_bytes()) for c in enc.cts.flat]] + [answers for _, answers in rounds]
    downs = [sum(questions) for questions, _ in rounds] + [result]
    return list(zip(ups, downs)), max(len(c.to_bytes()) for c in out.cts.flat)


def run(name: str, requests: int) -> dict:
    plan, piece = exchanges(name)
    port = free_port()
    with confined_to({0}):
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(piece)])
    try:
        import httpx
        from ringfire.serve import wire
        from ringfire.serve.client import read_in_pieces_of
        rf.memory.retain_freed(64 * 2**20)
        read_in_pieces_of(1 << 20)
        with confined_to({1}), httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            for _ in range(100):
                try:
                    http.get("/live")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            bodies = [([os.urandom(n) for n in sizes], down) for sizes, down in plan]

            def inference():
                for parts, down in bodies:
                    with http.stream("POST", "/exchange", params={"down": down}, content=wire.Blocks(parts),
                                     headers={"Content-Length": str(wire.parts_size(parts))}) as r:
                        got = sum(len(b) for b in r.iter_raw())
                    assert got == down, (got, down)

            for _ in range(3):
                inference()
            server_cpu, client_cpu, wall = process_cpu_s(server.pid), time.process_time(), time.perf_counter()
            for _ in range(requests):
                inference()
            return {"model": name, "http_requests": len(plan),
                    "mb_up": sum(sum(s) for s, _ in plan) / 1e6, "mb_down": sum(d for _, d in plan) / 1e6,
                    "server_cpu_ms": 1e3 * (process_cpu_s(server.pid) - server_cpu) / requests,
                    "client_cpu_ms": 1e3 * (time.process_time() - client_cpu) / requests,
                    "wall_ms": 1e3 * (time.perf_counter() - wall) / requests}
    finally:
        server.kill()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--requests", type=int, default=40, help="inferences timed per model")
    ap.add_argument("--json")
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("serve_stack.py needs two cores: the server on one, the client on the other")
    rows = [run(name, args.requests) for name in args.models.split(",")]
    print("| model | HTTP requests | MB up | MB down | server CPU ms | client CPU ms | wall ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['model']} | {r['http_requests']} | {r['mb_up']:.2f} | {r['mb_down']:.2f} | "
              f"{r['server_cpu_ms']:.1f} | {r['client_cpu_ms']:.1f} | {r['wall_ms']:.1f} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
