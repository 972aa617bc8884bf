"""Real servers for the serving tests: uvicorn on 127.0.0.1 in a thread (or a subprocess,
for the restart tests), each bounded in time; a tokens file with two tenants."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import numpy as np
from blake3 import blake3

SEED = bytes(range(32))
DIGEST_BLOCK = 1 << 16  # docs/serving.md: keys are hashed in blocks of 64 KiB


def _block_digests(data: bytes) -> bytes:
    return b"".join(blake3(data[i:i + DIGEST_BLOCK]).digest() for i in range(0, len(data), DIGEST_BLOCK))


def key_digest_of(data: bytes) -> str:
    """A key's digest from its definition in docs/serving.md, computed here with the blake3
    package alone (not by ringfire.serve.keydigest, which the tests check against it)."""
    return blake3(b"ringfire key digest v2\n" + _block_digests(data)).hexdigest()


def chunk_digest_of(chunk: bytes) -> str:
    """A chunk's digest (a chunk starts on a block boundary) from the same definition."""
    return blake3(b"ringfire chunk digest v2\n" + _block_digests(chunk)).hexdigest()


def process_cpu_s(pid: int) -> float:
    """User and system CPU seconds of process `pid` so far (Linux /proc; a process that has
    exited but not been waited for still answers)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def kernel_threads(n: int):
    """ringfire's kernels on `n` threads inside the block (process-wide), the count before
    restored after it."""
    import ringfire as rf
    before = rf.num_threads()
    rf.set_num_threads(n)
    try:
        yield
    finally:
        rf.set_num_threads(before)


@contextlib.contextmanager
def confined_to(cpus: set[int] | None):
    """Every thread of this process on ``cpus`` inside the block (threads started meanwhile
    inherit it from the thread that starts them), all the cores it had before restored after;
    None: no change."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)

    def pin(cores):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
                os.sched_setaffinity(int(tid), cores)
    pin(cpus)
    try:
        yield
    finally:
        pin(before)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tokens_file(path) -> dict[str, str]:
    """Two tenants, one token each; returns {tenant: token}."""
    from ringfire.serve.auth import add_token
    return {tenant: add_token(path, tenant) for tenant in ("alice", "bob")}


@contextlib.contextmanager
def server_thread(config, port: int | None = None, **uvicorn_options):
    """A uvicorn server of `config` in this process; yields (base URL, app). ``uvicorn_options``:
    e.g. ``ssl_certfile`` / ``ssl_keyfile`` for HTTPS."""
    import uvicorn

    from ringfire.serve import create_app
    from ringfire.serve.bodies import http_protocol
    port = port or free_port()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        app = create_app(config)
    options = {"http": http_protocol(), **uvicorn_options}  # the protocol `ringfire serve` runs
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           timeout_graceful_shutdown=5, **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        scheme = "https" if uvicorn_options.get("ssl_certfile") else "http"
        yield f"{scheme}://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@contextlib.contextmanager
def server_process(args: list[str], port: int, cpus: set[int] | None = None):
    """`ringfire serve ...` as its own process (killed at the end if still running); with
    ``cpus``, confined to those cores (every thread it starts inherits the set)."""
    # The log goes to a file: a pipe nobody reads fills up and stalls the server.
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "ringfire", "serve", *args, "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONWARNINGS": "ignore"},
                            preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus))
    import httpx
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v2/health/live", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.seek(0)
            raise RuntimeError("the server process did not start: " + log.read().decode()[-2000:])
        time.sleep(0.1)
    def read_log() -> str:
        log.seek(0)
        return log.read().decode(errors="replace")

    proc.read_log = read_log
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        log.close()


def batch(n: int, width: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, width))


def self_signed(directory) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key (PEM files), for the TLS test."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = f"{directory}/cert.pem", f"{directory}/key.pem"
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path
