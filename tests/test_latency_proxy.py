"""benchmarks/latency_proxy.py, the relay serve_latency.py measures round trips through: every
byte arrives, in order, and a round trip takes at least twice the delay."""

import pathlib
import socket
import subprocess
import sys
import threading
import time

from serve_support import free_port

PROXY = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "latency_proxy.py"


def echo_server() -> tuple[socket.socket, int]:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            while data := conn.recv(1 << 16):
                conn.sendall(data)
    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def test_the_relay_keeps_every_byte_in_order_and_delays_each_way():
    listener, to = echo_server()
    port = free_port()
    proxy = subprocess.Popen([sys.executable, str(PROXY), "--listen", str(port), "--to", str(to), "--delay-ms", "30"])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline and proxy.poll() is None, "the relay did not start"
                time.sleep(0.05)
        with conn:
            payload = bytes(range(256)) * 4096  # 1 MiB, in many pieces
            start = time.perf_counter()
            conn.sendall(payload)
            got = bytearray()
            while len(got) < len(payload):
                got += conn.recv(1 << 16)
            took = time.perf_counter() - start
        assert bytes(got) == payload
        assert took >= 0.06, f"a round trip took {took * 1e3:.1f} ms, less than twice the 30 ms delay"
    finally:
        proxy.kill()
        proxy.wait(timeout=10)
        listener.close()
