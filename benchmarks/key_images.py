#!/usr/bin/env python3
"""Keys loaded or mapped: what a server pays to make stored keys usable, in time and in
anonymous memory (ringfire.serve maps key images: docs/serving.md, docs/keys.md).

    python benchmarks/key_images.py [--preset N16_BOOT] [--rotations 16] [--json out.json]

The client side makes the preset's keys once (relinearization, Galois keys of `rotations`
power-of-two steps, and the bootstrapping keys where the preset bootstraps) and writes each
kind twice: the streamed envelope an upload stores (``save_to``) and its key image
(``save_image``; relinearization and Galois keys expanded, bootstrapping keys seeded, as
the server writes them). Each (kind, way) then runs in a fresh process, with the file's
pages first dropped from the page cache (posix_fadvise DONTNEED: a cold start) and then
again with them read into it first (a warm restart):

- load: ``ctx.load_from(blob)`` (every word read and range-checked), then ``expand()`` for
  relinearization and Galois keys (what their first use does);
- map: ``ctx.map_keys(image, verify=True)`` (the header checked, every page read once for
  the checksum).

Each reports the seconds until the keys are usable, the process's RssAnon and RssFile
growth, two uses of the keys (a relinearization, a rotation, a bootstrap; the first
bootstrap also builds its circuit) and RssAnon after them (bootstrapping keys expand their
uniform halves at each use, a limb at a time).
Then two processes at once hold the bootstrapping keys (the Galois keys where the preset
does not bootstrap), loaded or mapped (verified: every page read), and their PSS (proportional
set size, from /proc/PID/smaps_rollup) shows what they share: two processes mapping the same
image share its pages; two loading it hold two copies. ``--sharing-only`` runs that part alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import ringfire as rf
from ringfire.memory_guard import proc_memory

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from _common import cpu_model  # noqa: E402

GIB = 2**30


def memory() -> dict:
    return proc_memory("RssAnon", "RssFile")


def drop_from_page_cache(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_into_page_cache(path: str) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 24):
            pass


def child(args) -> None:
    """One (kind, way) in this fresh process: prints a JSON line."""
    import numpy as np
    rf.set_num_threads(args.threads)
    ctx = rf.ckks.Context.from_bytes(open(os.path.join(args.dir, "params"), "rb").read())
    path = os.path.join(args.dir, f"{args.kind}.{'image' if args.way == 'map' else 'blob'}")
    (drop_from_page_cache if args.cold else read_into_page_cache)(path)
    before = memory()
    t = time.perf_counter()
    if args.way == "map":
        key = ctx.map_keys(path, verify=True)
    else:
        key = ctx.load_from(path)
        if args.kind != "bootstrap":
            key.expand()
    ready = time.perf_counter() - t
    after = memory()
    x = np.linspace(-0.5, 0.5, ctx.slots)
    public = ctx.load(open(os.path.join(args.dir, "public"), "rb").read())
    keys = rf.rlwe.keys.KeySet(public=public)
    setattr(keys, args.kind, key)
    if args.kind == "bootstrap":
        keys.relin = ctx.map_keys(os.path.join(args.dir, "relin.image"))
    ev = ctx.evaluator(keys)
    level = ctx.bootstrap_min_level if args.kind == "bootstrap" else ctx.max_level
    c = ctx.encrypt(x, keys, level=level)
    uses = []
    for _ in range(2):  # the first bootstrap also builds the bootstrapping circuit
        t = time.perf_counter()
        if args.kind == "relin":
            ev.relinearize(ev.multiply(c, c))
        elif args.kind == "galois":
            ev.rotate(c, 1)
        else:
            ev.bootstrap(c)
        uses.append(time.perf_counter() - t)
    use_memory = memory()
    print(json.dumps({"ready_s": round(ready, 3), "rss_anon_gib": round((after["RssAnon"] - before["RssAnon"]) / GIB, 3),
                      "rss_file_gib": round((after["RssFile"] - before["RssFile"]) / GIB, 3),
                      "first_use_s": round(uses[0], 3), "second_use_s": round(uses[1], 3),
                      "rss_anon_after_use_gib": round((use_memory["RssAnon"] - before["RssAnon"]) / GIB, 3)}))


HOLDER = ("import sys, time, ringfire as rf; d, kind, way = sys.argv[1:4]; "
          "ctx = rf.ckks.Context.from_bytes(open(d + '/params', 'rb').read()); "
          "key = ctx.map_keys(f'{d}/{kind}.image', verify=True) if way == 'map' else ctx.load_from(f'{d}/{kind}.blob'); "
          "print('ready', flush=True); time.sleep(60)")


def smaps_rollup(pid: int) -> dict:
    fields = proc_memory("Rss", "Pss", "Pss_Anon", "Pss_File", pid=pid, table="smaps_rollup")
    return {name.lower() + "_gib": round(value / GIB, 3) for name, value in fields.items()}


def sharing(d: str, kind: str) -> dict:
    """Two processes holding the same keys at once, loaded then mapped: their memory as the
    kernel accounts it (PSS splits shared pages between the processes that map them)."""
    out = {}
    for way in ("load", "map"):
        holders = [subprocess.Popen([sys.executable, "-c", HOLDER, d, kind, way], stdout=subprocess.PIPE, text=True)
                   for _ in range(2)]
        try:
            for h in holders:
                if h.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"a {way} holder failed")
            out[way] = [smaps_rollup(h.pid) for h in holders]
        finally:
            for h in holders:
                h.kill()
                h.wait()
        pss = [r["pss_gib"] for r in out[way]]
        print(f"  two processes, {kind} keys {dict(load='loaded', map='mapped')[way]}: RSS {out[way][0]['rss_gib']:.2f} GiB each, PSS "
              f"{pss[0]:.2f} + {pss[1]:.2f} = {sum(pss):.2f} GiB", flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="N16_BOOT")
    p.add_argument("--rotations", type=int, default=16, help="power-of-two rotation steps in the Galois keys")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", default=None)
    p.add_argument("--sharing-only", action="store_true", help="only the two processes holding the same keys")
    p.add_argument("--dir", default=None, help="(internal) the files of a run")
    p.add_argument("--child", default=None, help="(internal) kind,way,cold")
    args = p.parse_args()
    if args.child:
        args.kind, args.way, cold = args.child.split(",")
        args.cold = cold == "cold"
        child(args)
        return
    rf.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="ringfire-key-images-", dir=os.environ.get("TMPDIR", "/var/tmp")) as d:
        ctx = rf.ckks.Context.preset(args.preset)
        boot = ctx.can_bootstrap
        t = time.perf_counter()
        sk, keys = ctx.keygen(rotations=[1 << i for i in range(args.rotations)], bootstrap=boot)
        print(f"{args.preset}: keygen {time.perf_counter() - t:.1f} s", flush=True)
        open(os.path.join(d, "params"), "wb").write(ctx.to_bytes())
        open(os.path.join(d, "public"), "wb").write(keys.public.to_bytes())
        kinds = ["relin", "galois"] + (["bootstrap"] if boot else [])
        files = {}
        for kind in kinds:
            key = getattr(keys, kind)
            blob = key.save_to(os.path.join(d, f"{kind}.blob"))
            if kind != "bootstrap":
                key.expand()
            t = time.perf_counter()
            image = key.save_image(os.path.join(d, f"{kind}.image"))
            files[kind] = {"blob_gib": round(blob / GIB, 3), "image_gib": round(image / GIB, 3),
                           "image_write_s": round(time.perf_counter() - t, 2)}
            print(f"  {kind}: blob {blob / GIB:.3f} GiB, image {image / GIB:.3f} GiB "
                  f"(written in {files[kind]['image_write_s']} s)", flush=True)
        del sk, keys
        rows = []
        for kind in [] if args.sharing_only else kinds:
            for cold in ("cold", "warm"):
                for way in ("load", "map"):
                    out = subprocess.run([sys.executable, __file__, "--dir", d, "--child", f"{kind},{way},{cold}",
                                          "--threads", str(args.threads)], check=True, capture_output=True, text=True)
                    row = {"kind": kind, "way": way, "page_cache": cold, **json.loads(out.stdout.splitlines()[-1])}
                    rows.append(row)
                    print(f"  {kind:9} {way:4} {cold}: usable in {row['ready_s']:7.3f} s, RssAnon "
                          f"+{row['rss_anon_gib']:.3f} GiB, RssFile +{row['rss_file_gib']:.3f} GiB; uses "
                          f"{row['first_use_s']:.3f} / {row['second_use_s']:.3f} s, RssAnon then "
                          f"+{row['rss_anon_after_use_gib']:.3f} GiB", flush=True)
        shared = sharing(d, kinds[-1])
    result = {"preset": args.preset, "rotations": args.rotations, "threads": args.threads, "cpu": cpu_model(),
              "date": time.strftime("%Y-%m-%d"), "files": files, "rows": rows, "two_processes": shared}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
