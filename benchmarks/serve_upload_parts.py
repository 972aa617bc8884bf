#!/usr/bin/env python3
"""An encrypted input's upload as the container's parts or as ``wire.Blocks``: the client's
CPU and the receiving server's per request, in one run, the two alternating (parts first in
each round).

The body has the parts ``rf.serve.Client`` sends for the digits MLP (64 seeded N13_D2
ciphertexts at level 1: 64 envelopes of 93,311 bytes, each behind its 9-byte entry header,
about 6 MB; random bytes, the container's own few header bytes left out), sent to a
bare FastAPI endpoint under uvicorn in its own process that reads the body and drops it, so
the figures are the HTTP stacks' and not the service's checks. Both processes keep freed
buffers mapped (``rf.memory.retain_freed``), as ``ringfire serve`` does. Needs
``pip install 'ringfire[serve]'``.

    python benchmarks/serve_upload_parts.py [--rounds 6] [--requests 60] [--json out.json]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from serve_support import free_port, process_cpu_s  # noqa: E402

import ringfire as rf  # noqa: E402
from ringfire.serve import wire  # noqa: E402

ENTRIES, ENVELOPE = 64, 93_311


def sink(port: int) -> None:
    """The receiving server: reads each body whole, piece by piece, and answers its size."""
    import uvicorn
    from fastapi import FastAPI, Request

    app = FastAPI()

    @app.post("/sink")
    async def take(request: Request):
        size = 0
        async for piece in request.stream():
            size += len(piece)
        return {"bytes": size}

    rf.memory.retain_freed(64 * 2**20)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--json")
    ap.add_argument("--sink", type=int, help=argparse.SUPPRESS)  # the server process's own mode
    args = ap.parse_args()
    if args.sink:
        return sink(args.sink)
    import httpx

    rf.memory.retain_freed(64 * 2**20)
    parts = []
    for _ in range(ENTRIES):
        parts += [os.urandom(9), os.urandom(ENVELOPE)]
    size = wire.parts_size(parts)
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--sink", str(port)])
    url = f"http://127.0.0.1:{port}/sink"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.post(url, content=b"")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the sink server did not start")
                time.sleep(0.1)
        runs = {"parts": [], "blocks": []}
        with httpx.Client() as client:
            for _ in range(args.rounds):
                for kind in runs:
                    content = parts if kind == "parts" else wire.Blocks(parts)
                    post = lambda: client.post(url, content=content, headers={"Content-Length": str(size)})  # noqa: E731
                    for _ in range(3):
                        assert post().json()["bytes"] == size
                    mine, theirs = time.process_time(), process_cpu_s(server.pid)
                    for _ in range(args.requests):
                        post()
                    runs[kind].append({"client_ms": 1e3 * (time.process_time() - mine) / args.requests,
                                       "server_ms": 1e3 * (process_cpu_s(server.pid) - theirs) / args.requests})
    finally:
        server.kill()
        server.wait()
    print(f"one upload of {size:,} bytes in {len(parts)} parts, CPU ms per request (each round: "
          f"{args.requests} requests per side)")
    for kind, rows in runs.items():
        client_ms = " ".join(f"{r['client_ms']:.2f}" for r in rows)
        server_ms = " ".join(f"{r['server_ms']:.2f}" for r in rows)
        print(f"  {kind:7s} client {client_ms} | server {server_ms}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"date": time.strftime("%Y-%m-%d"), "bytes": size, "parts": len(parts), "requests": args.requests,
             "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
