"""``ringfire serve MODEL.onnx``: the server under uvicorn, and ``--add-token`` for its
tokens file; ``ringfire infer MODEL --server URL``: its client on the command line."""

from __future__ import annotations

import json
import logging
import time

import numpy as np


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="serve an ONNX model for encrypted inference over HTTP")
    p.add_argument("model", nargs="?", help="the ONNX file")
    p.add_argument("--store", default="ringfire-store", help="directory for keys, sessions, jobs and results")
    p.add_argument("--tokens", default="ringfire-tokens", help="tokens file: 'TENANT SHA256' per line")
    p.add_argument("--add-token", metavar="TENANT", help="append a new token for TENANT to --tokens, print it, exit")
    p.add_argument("--preset", default=None, help="CKKS preset (default N14_D6)")
    p.add_argument("--params", help="a file of context bytes (ctx.to_bytes()) instead of a preset")
    p.add_argument("--chained-rotations", action="store_true",
                   help="models that bootstrap: chained rotations (bootstrap={'chained_rotations': True}), so "
                        "clients make and upload about a third of the bootstrapping keys (N16_BOOT: 1.35 GB "
                        "instead of 3.74) for bootstraps about 15%% slower")
    p.add_argument("--activation", choices=["client", "poly"], default="client")
    p.add_argument("--calibration", help=".npy inputs that fit polynomial activations (--activation poly)")
    p.add_argument("--packing", choices=["batch", "inter"], default="batch")
    p.add_argument("--masking", action="store_true", help="mask what the key holder decrypts")
    p.add_argument("--device", default="cpu", metavar="DEVICE",
                   help="where the model computes: cpu (default), cuda or cuda:N (a CUDA build and a GPU; "
                        "inputs and keys are uploaded at their first use, results downloaded when sent)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run each job's layers on a Ray cluster (ringfire[ray]); keys and jobs stay here")
    p.add_argument("--replicas", type=int, default=None, metavar="K",
                   help="with --ray: serve from K Ray Serve replicas, one per node, sharing --store (a directory "
                        "every node sees); each replica runs the jobs it takes (docs/distributed.md)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--tls-cert", help="certificate (PEM): serve HTTPS")
    p.add_argument("--tls-key", help="the certificate's private key (PEM)")
    p.add_argument("--queue", type=int, default=16, help="jobs waiting to run, all tenants")
    p.add_argument("--workers", type=int, default=None,
                   help="jobs run at once (default: 4, some computing while others wait for their clients' "
                        "rounds, or fewer if four of the model's jobs would not fit in the memory available; "
                        "--packing inter runs one)")
    p.add_argument("--computing", type=int, default=None,
                   help="of those, jobs computing at once, first come first served (default: the cores over the "
                        "kernels' threads, one where the kernels use every core; every job with --device cuda "
                        "or --ray)")
    p.add_argument("--round-timeout", type=float, default=300.0, help="seconds a job waits for its client")
    p.add_argument("--drain-timeout", type=float, default=600.0, help="seconds a shutdown waits for running jobs")
    p.add_argument("--requests-per-second", type=float, default=50.0, help="per tenant")
    p.add_argument("--session-idle", type=float, default=24 * 3600.0,
                   help="seconds a session may go unused before the server closes it (its results deleted; 0: never)")
    p.add_argument("--result-ttl", type=float, default=24 * 3600.0,
                   help="seconds a job's result is kept after the job ended (0: for good)")
    p.add_argument("--key-idle", type=float, default=30 * 24 * 3600.0,
                   help="seconds a stored key no session links may go unused before it is deleted (0: never; a "
                        "tenant's unlinked keys also go, least recently used first, when an upload needs their room)")
    p.add_argument("--access-log", action="store_true",
                   help="log every request (uvicorn's access log; off by default: a client makes two "
                        "requests an inference with one client-aided round, and /metrics counts them by route and status)")
    p.add_argument("--no-key-images", action="store_true",
                   help="keep checked keys loaded in memory instead of mapping key images written to --store "
                        "(images take up to twice the uploads' disk space; docs/serving.md)")
    p.add_argument("--pool-cache-gib", type=float, default=2.0,
                   help="GiB of freed memory the process keeps for reuse (ringfire.memory.set_cache_limit; "
                        "default 2: the memory of a large job goes back to the system when it ends)")
    p.add_argument("--retain-freed-mib", type=int, default=64,
                   help="MiB of freed buffers (request bodies, serialized ciphertexts) the C library keeps mapped "
                        "for reuse instead of returning them to the system at once (ringfire.memory.retain_freed; "
                        "0: glibc's own thresholds)")
    p.set_defaults(func=main)


def main(args) -> int:
    from .auth import add_token
    if args.add_token:
        print(add_token(args.tokens, args.add_token))
        return 0
    if not args.model:
        raise ValueError("[serve] give the ONNX model to serve (or --add-token TENANT)")
    try:
        import uvicorn
    except ImportError:
        raise ImportError("[serve] the server needs its extra: pip install 'ringfire[serve]'") from None
    from . import ServeConfig, create_app
    from .bodies import http_protocol
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ValueError("[serve] --tls-cert and --tls-key go together")
    if args.replicas is not None and args.ray is None:
        raise ValueError("[serve] --replicas needs --ray [ADDRESS]: the replicas are Ray Serve's")
    if args.replicas is not None and args.device != "cpu":
        raise ValueError(f"[serve] --replicas computes on the Ray nodes' CPUs: --device {args.device} does not apply")
    config = ServeConfig(model=args.model, store=args.store, tokens=args.tokens,
                         preset=None if args.params else (args.preset or "N14_D6"), params=args.params,
                         bootstrap={"chained_rotations": True} if args.chained_rotations else None,
                         activation=args.activation, calibration=args.calibration, packing=args.packing,
                         masking=args.masking, device=args.device, ray=None if args.replicas else args.ray,
                         queue=args.queue,
                         workers=args.workers, computing=args.computing, round_timeout=args.round_timeout,
                         drain_timeout=args.drain_timeout, requests_per_second=args.requests_per_second,
                         session_idle=args.session_idle, result_ttl=args.result_ttl, key_idle=args.key_idle,
                         key_images=not args.no_key_images, retain_freed=_retain_freed_bytes(args.retain_freed_mib))
    if not 0 <= args.pool_cache_gib < 2**20:
        raise ValueError(f"[serve] --pool-cache-gib takes GiB from 0 up, got {args.pool_cache_gib}")
    from .. import memory
    memory.set_cache_limit(int(args.pool_cache_gib * 2**30))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if args.replicas is not None:
        return serve_replicas(args, config)
    uvicorn.run(create_app(config), host=args.host, port=args.port, ssl_certfile=args.tls_cert,
                ssl_keyfile=args.tls_key, timeout_graceful_shutdown=int(config.drain_timeout) + 5,
                log_level="info", access_log=args.access_log, http=http_protocol())
    return 0


def _retain_freed_bytes(mib: int) -> int:
    if not 0 <= mib <= 1024:
        raise ValueError(f"[serve] --retain-freed-mib takes MiB from 0 to 1024, got {mib}")
    return mib * 2**20


def serve_replicas(args, config) -> int:
    """--ray --replicas K: Ray Serve's proxy on --host:--port, K replicas behind it; runs until
    interrupted (Ctrl-C or SIGTERM), then takes them down: jobs computing finish within
    --drain-timeout, jobs waiting for their clients fail (nothing routes to them any more)."""
    import signal

    from . import replicas
    replicas.check_count(args.replicas)

    def interrupted(signum, frame):
        raise KeyboardInterrupt
    for name in ("SIGINT", "SIGTERM"):  # systemd, docker and kill stop it as Ctrl-C does, as uvicorn would
        signal.signal(getattr(signal, name), interrupted)
    started = False
    try:
        replicas.run(config, args.replicas, address=args.ray or None, host=args.host, port=args.port,
                     tls_cert=args.tls_cert, tls_key=args.tls_key)
        for name in ("SIGINT", "SIGTERM"):  # again: connecting to Ray put its own handlers there
            signal.signal(getattr(signal, name), interrupted)
        started = True
        print(f"serving {config.name} from {args.replicas} replicas at {'https' if args.tls_cert else 'http'}://"
              f"{args.host}:{args.port} (Ctrl-C stops)", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        # A second Ctrl-C leaves at once, without a traceback; Ray's shutdown signals its own
        # processes, so a SIGTERM now must not cut the drain short.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("stopping: the replicas finish their running jobs (at most --drain-timeout; at once with a Ray "
              "instance this command started). Ctrl-C again leaves now.", flush=True)
        replicas.stop(wait=config.drain_timeout + 60)
        print("stopped", flush=True)
        return 0 if started else 130


def remote_infer(args) -> int:
    """``--server``: keys made here (master keys where the model takes them) and uploaded once
    per session, the batch encrypted here, the model run by the server (client-aided rounds
    answered here), decrypted here."""
    import importlib.util
    import os
    import pathlib

    from ..nn import cli as nn_cli
    from . import Client
    x = np.load(args.input).astype(np.float64)
    token = args.token or os.environ.get("RINGFIRE_TOKEN")
    if not token:
        raise ValueError("[infer] --server needs the tenant's token: --token or $RINGFIRE_TOKEN")
    path = pathlib.Path(args.model)
    name = path.stem if path.suffix == ".onnx" else args.model
    t0 = time.perf_counter()
    with Client(args.server, token) as client:
        # The batch in the model's input shape (flat rows reshaped, NHWC transposed with --layout),
        # from the server's description of it: the ONNX file may not be here.
        described = client.model(name)
        x = nn_cli.fit_input(x, tuple(described["inputs"][0]["shape"][1:]), args.layout)
        # Master keys where the model takes them: the server derives its Galois keys.
        master = bool(described["parameters"].get("master_keys"))
        keys_state = "made"
        if args.keys:  # kept between runs: the server links the copy it stores instead of receiving them again
            from .client_keys import kept_keys
            ctx = client.context(name)
            sk, keys, keys_state = kept_keys(client, name, ctx, args.keys, master_rotations=master)
            opened = client.session(name, ctx, sk, keys, progress=None if not args.json else False)
        else:
            opened = client.session(name, progress=None if not args.json else False, master_rotations=master)
        # Closed at the end: its result deleted on the server, its keys kept stored there (for a
        # next run with --keys to link; keys made afresh each run go once unused for a while).
        with opened as session:
            t1 = time.perf_counter()
            y = session.infer(x, progress=None if not args.json else False)
            t2 = time.perf_counter()
    report = {"server": args.server, "model": name, "batch": int(x.shape[0]), "output_shape": list(y.shape),
              "rounds": session.rounds, "master_keys": master, "keys": keys_state, "sent": session.key_state,
              "seconds": {"keys": t1 - t0, "inference": t2 - t1}}
    if path.is_file() and importlib.util.find_spec("onnxruntime") is not None:
        ref, reference = nn_cli.reference_outputs(path, x, None)
        report.update(reference=reference, top1_agreement=nn_cli.top1_agreement(y, ref),
                      max_abs_error=float(np.max(np.abs(y - ref))))
    if args.output:
        np.save(args.output, y)
    if args.json:
        print(json.dumps({**report, "outputs": y.tolist()}, indent=2))
    else:
        print(f"outputs: shape {y.shape}; first row {np.round(y.reshape(len(y), -1)[0][:10], 4)}")
        if "top1_agreement" in report:
            print(f"top-1 agreement with {report['reference']}: {report['top1_agreement'] * 100:.2f}%  "
                  f"(max |error| {report['max_abs_error']:.2e})")
        print(f"server {args.server}: keys {keys_state} here and "
              f"{', '.join(f'{k} {v}' for k, v in session.key_state.items())} there, "
              f"{report['seconds']['keys']:.2f} s; inference "
              f"{report['seconds']['inference']:.2f} s, {session.rounds} client-aided rounds")
    return 0
