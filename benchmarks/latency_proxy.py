#!/usr/bin/env python3
"""A TCP relay on loopback that delays every byte by a fixed time each way: a link with a round
trip of twice ``--delay-ms`` and no bandwidth limit, for measuring what round trips cost a
protocol on a machine without ``tc netem``. Bytes keep their order; each piece read is sent
``--delay-ms`` after it arrived, so pieces in flight overlap as on a real link.

    python benchmarks/latency_proxy.py --listen 9001 --to 8000 --delay-ms 10
"""

from __future__ import annotations

import argparse
import asyncio
import time


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    pending: asyncio.Queue = asyncio.Queue()

    async def forward():
        while (item := await pending.get()) is not None:
            due, data = item
            if (wait := due - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    sender = asyncio.create_task(forward())
    try:
        while data := await reader.read(1 << 16):
            pending.put_nowait((time.monotonic() + delay, data))
    except ConnectionError:
        pass
    finally:
        pending.put_nowait(None)
        try:
            await sender
        except ConnectionError:
            pass


async def main(listen: int, to: int, delay: float) -> None:
    async def relay(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", to)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay))
        server_writer.close()
        client_writer.close()

    server = await asyncio.start_server(relay, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--to", type=int, required=True)
    ap.add_argument("--delay-ms", type=float, required=True, help="one way")
    args = ap.parse_args()
    asyncio.run(main(args.listen, args.to, args.delay_ms / 1e3))
