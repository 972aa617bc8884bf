"""A server's settings and limits, one place (``ringfire serve`` fills them from its flags)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .keydigest import BLOCK

MIB = 2**20


@dataclass
class ServeConfig:
    model: str                                # the ONNX file
    store: str                                # where keys, sessions, jobs and results live
    tokens: str                               # the tokens file (tenant and SHA-256 per line)
    preset: str | None = "N14_D6"             # the CKKS preset ...
    params: str | None = None                 # ... or a file of context bytes (ctx.to_bytes())
    bootstrap: dict | None = None             # bootstrapping options the parameters bytes do not record
    activation: str = "client"                # "client" (rounds with the key holder) or "poly"
    calibration: str | None = None            # .npy inputs that fit the polynomial activations
    packing: str = "batch"                    # "batch" or "inter"
    masking: bool = False                     # mask what the key holder decrypts (ringfire.nn.masking)
    device: str = "cpu"                       # where the model computes: "cpu", "cuda" or "cuda:N" (inputs,
                                              # replies and keys are read on the host, uploaded at first use)
    ray: str | None = None                    # a Ray cluster's address ("": RAY_ADDRESS or the local
                                              # one) that runs each layer's ciphertexts (ringfire.distributed)
    # Limits ------------------------------------------------------------------------------
    chunk_bytes: int = 64 * MIB               # the largest key-upload chunk a request may carry
    tenant_bytes: int = 64 * 2**30            # stored keys (with their images), partial uploads and results per tenant
    tenant_sessions: int = 64
    tenant_jobs: int = 4                      # jobs queued, running or waiting for their client
    queue: int = 16                           # jobs waiting to run, all tenants (more: 429)
    requests_per_second: float = 50.0         # per tenant, with a burst of twice that
    round_timeout: float = 300.0              # seconds a job waits for its client's answer
    # Retention (retention.py; 0: kept for good) -------------------------------------------
    session_idle: float = 24 * 3600.0         # seconds a session may go unused before it is closed
    result_ttl: float = 24 * 3600.0           # seconds a job's result is kept after the job ended
    key_idle: float = 30 * 24 * 3600.0        # seconds a stored key no session links may go unused
    sweep_every: float = 60.0                 # seconds between two looks for what has expired
    drain_timeout: float = 600.0              # seconds a shutdown waits for the running job
    workers: int | None = None                # jobs run at once (None: Host.default_workers, up to 4: some
                                              # compute while others wait for their clients; inter packing: 1,
                                              # its cached diagonals are shared)
    computing: int | None = None              # of those, jobs computing at once, first come first served (the
                                              # others wait for their clients or their turn; None: the cores
                                              # over the kernels' threads on the CPU, every job with a GPU or
                                              # Ray; turns.py says why)
    key_images: bool = True                   # map checked keys from key images in the store (not loaded)
    retain_freed: int = 64 * MIB              # freed C-library memory kept mapped for the next bodies
                                              # (ringfire.memory.retain_freed; 0: glibc's own thresholds)
    shared_store: bool = False                # other processes serve from the same store (the replicas of
                                              # ringfire serve --replicas): jobs are failed by staleness, not
                                              # at start
    silent_seconds: float = 15.0              # shared store: a process silent this long is taken for dead and
                                              # its unfinished jobs are reported failed
    name: str = field(default="")             # the model's name (default: the file's stem)

    def __post_init__(self):
        if not self.name:
            self.name = Path(self.model).stem
        if self.activation not in ("client", "poly"):
            raise ValueError(f"[serve] activation is 'client' or 'poly', got {self.activation!r}")
        if self.packing not in ("batch", "inter"):
            raise ValueError(f"[serve] packing is 'batch' or 'inter', got {self.packing!r}")
        if self.workers is not None and not 1 <= self.workers <= 64:
            raise ValueError(f"[serve] workers: from 1 to 64 jobs at once, got {self.workers!r}")
        if self.computing is not None and not 1 <= self.computing <= 64:
            raise ValueError(f"[serve] computing: from 1 to 64 jobs at once, got {self.computing!r}")
        if self.packing == "inter":
            self.workers = 1
        if isinstance(self.retain_freed, bool) or not isinstance(self.retain_freed, int) \
                or not 0 <= self.retain_freed <= 2**30:
            raise ValueError(f"[serve] retain_freed: bytes from 0 to 1 GiB, got {self.retain_freed!r}")
        if self.chunk_bytes < BLOCK:
            raise ValueError(f"[serve] chunk_bytes: at least one block of a key's digest ({BLOCK}), got "
                             f"{self.chunk_bytes!r}")
        for name in ("session_idle", "result_ttl", "key_idle"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"[serve] {name}: seconds, 0 or more (0: kept for good), got {value!r}")
        if not 0.01 <= self.sweep_every <= 3600:
            raise ValueError(f"[serve] sweep_every: from 0.01 to 3600 seconds, got {self.sweep_every!r}")
        if not 0.5 <= self.silent_seconds <= 3600:
            raise ValueError(f"[serve] silent_seconds: from 0.5 to 3600, got {self.silent_seconds!r}")
        if not isinstance(self.device, str) or not (self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"[serve] device is 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")
        if self.device != "cpu" and self.ray is not None:
            raise ValueError(f"[serve] device {self.device!r} and a Ray cluster do not go together: the cluster's "
                             "workers compute on their own hosts' CPUs")
        if (self.preset is None) == (self.params is None):
            raise ValueError("[serve] give a preset or a parameters file, not both")
