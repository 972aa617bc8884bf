"""Traces of what a real computation asks of the hardware.

>>> import ringfire as rf
>>> with rf.trace() as t:                       # doctest: +SKIP
...     z = x * y                               # any ringfire code, any scheme, any device
>>> print(t.table("primitive"))                 # doctest: +SKIP
>>> t.save("mul.json")                          # doctest: +SKIP

While a trace is open, every call the schemes make into a backend (NTT, inverse
NTT, element-wise products and sums, automorphisms, base conversions, the key
switching inner product, copies) is counted in the native core, with its ring
size, limbs and bytes, under the operation it serves (``ckks.multiply``,
``ckks.relinearize``, ``bgv.rotate``, ... the outermost one wins). Counting
is aggregated, so tracing a long run costs little memory. Each entry also
sums the wall time spent inside its calls (``nanoseconds``), so
``t.table("kernel")`` is a per-kernel profile of a real run.

``rf.trace(dry_run=True)`` records the same calls and runs none of them: the
values computed are garbage (do not decrypt them), the counts are those of the
real run, and the time is that of the bookkeeping. Keys and encryptions still
sample their randomness on the host.

Primitives: :meth:`Trace.primitives` turns kernel calls into the per-limb ring
operations accelerators are sized by (seed 003 counts ringAdd, ringMult and
NTT/iNTT per tower): see :data:`PRIMITIVE_RULES` for each kernel's rule.
:mod:`ringfire.rpu.project` costs them on RPU tiles.
"""

from __future__ import annotations

import csv
import io
import json
import platform
import time
from collections import defaultdict
from importlib import metadata

from . import _core

FORMAT = "ringfire-trace"
FORMAT_VERSION = 1
FIELDS = ("kernel", "label", "device", "n", "limbs", "source_limbs", "terms", "calls", "polys", "words",
          "bytes_read", "bytes_written", "nanoseconds")
# Fields a trace saved by an older ringfire may lack, and their value then.
_OPTIONAL_FIELDS = {"nanoseconds": 0}
PRIMITIVES = ("ntt", "intt", "add", "mult", "automorphism", "move_words")

# How each kernel call becomes per-limb ring operations ("towers" in seed 003's
# words). P = polynomials (the calls' batches summed), L = limbs, T = terms,
# a -> b = a base conversion from a limbs to b. Base conversions count the
# exact conversion ringfire runs: a products by q_i-hat^-1, a*b products and
# (a-1)*b sums for the fast conversion, and b products and sums for the
# correction of its overflow.
PRIMITIVE_RULES = {
    "ntt_forward": "ntt: P*L",
    "ntt_inverse": "intt: P*L",
    "add": "add: P*L", "sub": "add: P*L", "negate": "add: P*L", "add_scalar": "add: P*L",
    "multiply": "mult: P*L", "multiply_scalar": "mult: P*L",
    "multiply_add": "mult: P*L, add: P*L",
    "inner_product_pair": "mult: 2*T*L, add: 2*(T-1)*L per call",
    "linear_combination": "mult: T*P*L, add: (T-1)*P*L",
    "poly_multiply": "ntt: 2*P*L, mult: P*L, intt: P*L",
    "base_convert": "mult: P*(a + a*b + b), add: P*((a-1)*b + b)",
    "base_convert_ntt": "as base_convert, and ntt: P*b",
    "automorphism": "automorphism: P*L",
    "copy": "move_words: words", "zero": "move_words: words",
}


def _primitives_of(e: dict) -> dict[str, int]:
    """Ring operations of one aggregated trace entry (PRIMITIVE_RULES)."""
    k, p, limbs, terms = e["kernel"], e["polys"], e["limbs"], e["terms"]
    towers = p * limbs
    if k == "ntt_forward":
        return {"ntt": towers}
    if k == "ntt_inverse":
        return {"intt": towers}
    if k in ("add", "sub", "negate", "add_scalar"):
        return {"add": towers}
    if k in ("multiply", "multiply_scalar"):
        return {"mult": towers}
    if k == "multiply_add":
        return {"mult": towers, "add": towers}
    if k == "inner_product_pair":
        return {"mult": 2 * terms * limbs * e["calls"], "add": 2 * max(terms - 1, 0) * limbs * e["calls"]}
    if k == "linear_combination":
        return {"mult": terms * towers, "add": max(terms - 1, 0) * towers}
    if k == "poly_multiply":
        return {"ntt": 2 * towers, "mult": towers, "intt": towers}
    if k in ("base_convert", "base_convert_ntt"):
        a, b = e["source_limbs"], limbs
        out = {"mult": p * (a + a * b + b), "add": p * ((a - 1) * b + b)}
        if k == "base_convert_ntt":
            out["ntt"] = p * b
        return out
    if k == "automorphism":
        return {"automorphism": towers}
    if k in ("copy", "zero"):
        return {"move_words": e["words"]}
    raise ValueError(f"[trace] no primitive rule for kernel {k!r}")


class Trace:
    """The aggregated backend calls of one traced run.

    ``entries``: one dict per distinct call shape (:data:`FIELDS`).
    ``dry_run``: whether the calls were only recorded. ``seconds``: the
    traced block's wall time. ``meta``: free-form notes saved with it.
    """

    def __init__(self, entries=(), dry_run: bool = False, seconds: float = 0.0, meta: dict | None = None):
        self.entries = [dict(e) for e in entries]
        self.dry_run = bool(dry_run)
        self.seconds = float(seconds)
        self.meta = dict(meta or {})
        self._start = None

    # -- recording -------------------------------------------------------------
    def __enter__(self) -> "Trace":
        _core.trace_start(self.dry_run)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._start
        self.entries = list(_core.trace_stop())

    # -- summaries -------------------------------------------------------------
    def primitives(self, by: str | None = None) -> dict:
        """Ring operations per (primitive, n), or per (key, primitive, n) with ``by`` a field name.

        ``copy``/``zero`` count words (``move_words``, n = 0), everything else
        counts one operation on one N-coefficient limb.
        """
        out: dict = defaultdict(int)
        for e in self.entries:
            for prim, count in _primitives_of(e).items():
                if count:
                    out[(prim, e["n"]) if by is None else (e[by], prim, e["n"])] += count
        return dict(out)

    def totals(self, by: str = "kernel") -> list[dict]:
        """Calls, polynomials, bytes and seconds inside the calls, summed per ``by``.

        ``by`` is a field (``kernel``, ``label``, ``n``, ...). Rows come most
        time first when the trace was timed (a real run), else most bytes first.
        """
        if by not in FIELDS[:7]:
            raise ValueError(f"[trace] cannot group by {by!r}; one of {', '.join(FIELDS[:7])}")
        summed = ("calls", "polys", "bytes_read", "bytes_written", "nanoseconds")
        rows: dict = {}
        for e in self.entries:
            row = rows.setdefault(e[by], {by: e[by], **{f: 0 for f in summed}})
            for f in summed:
                row[f] += e[f]
        for row in rows.values():
            row["seconds"] = row.pop("nanoseconds") / 1e9
        if self.timed:
            return sorted(rows.values(), key=lambda r: -r["seconds"])
        return sorted(rows.values(), key=lambda r: -(r["bytes_read"] + r["bytes_written"]))

    def counts(self) -> list[dict]:
        """The entries without their times: what a dry run and the real run agree on."""
        return [{f: e[f] for f in FIELDS if f != "nanoseconds"} for e in self.entries]

    @property
    def timed(self) -> bool:
        """Whether the entries carry the time spent in the calls (a real run, not a dry run or an old file)."""
        return any(e["nanoseconds"] for e in self.entries)

    def table(self, by: str = "primitive") -> str:
        """A printable summary: ``primitive`` (per operation label), ``kernel`` or ``label``."""
        if by == "primitive":
            per = self.primitives(by="label")
            labels = sorted({k[0] for k in per})
            cols = [p for p in PRIMITIVES if any(k[1] == p for k in per)]
            head = ["operation", "n"] + cols
            lines = []
            for label in labels:
                for n in sorted({k[2] for k in per if k[0] == label}):
                    vals = [per.get((label, p, n), 0) for p in cols]
                    if any(vals):
                        lines.append([label or "(none)", str(n)] + [f"{v:,}" for v in vals])
            return _format(head, lines)
        rows = self.totals(by)
        head = [by, "calls", "polys", "MB read", "MB written"]
        lines = [[str(r[by]) or "(none)", f"{r['calls']:,}", f"{r['polys']:,}", f"{r['bytes_read'] / 1e6:.1f}",
                  f"{r['bytes_written'] / 1e6:.1f}"] for r in rows]
        if self.timed:
            inside = sum(r["seconds"] for r in rows) or 1.0
            head += ["ms", "% of kernel time"]
            for line, r in zip(lines, rows):
                line += [f"{r['seconds'] * 1e3:.2f}", f"{100 * r['seconds'] / inside:.1f}"]
        return _format(head, lines)

    def __add__(self, other: "Trace") -> "Trace":
        """Both traces' calls together (a workload made of parts traced apart)."""
        if not isinstance(other, Trace):
            return NotImplemented
        key_fields = FIELDS[:7]
        merged: dict = {}
        for e in self.entries + other.entries:
            key = tuple(e[f] for f in key_fields)
            if key in merged:
                for f in FIELDS[7:]:
                    merged[key][f] += e[f]
            else:
                merged[key] = dict(e)
        return Trace(sorted(merged.values(), key=lambda e: tuple(e[f] for f in key_fields)),
                     self.dry_run or other.dry_run, self.seconds + other.seconds,
                     {"parts": [self.meta.get("workload", "?"), other.meta.get("workload", "?")]})

    def __repr__(self) -> str:
        calls = sum(e["calls"] for e in self.entries)
        kind = "dry-run trace" if self.dry_run else "trace"
        return f"<ringfire {kind}: {calls:,} backend calls in {len(self.entries)} shapes, {self.seconds:.3f} s>"

    # -- files -----------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": FORMAT_VERSION, "dry_run": self.dry_run, "seconds": self.seconds,
                "meta": {"ringfire": _version(), "python": platform.python_version(),
                         "machine": platform.machine(), **self.meta},
                "entries": self.entries}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(self.entries)
        return buf.getvalue()

    def save(self, path) -> None:
        """Writes JSON, or CSV of the entries when ``path`` ends in ``.csv``."""
        text = self.to_csv() if str(path).endswith(".csv") else self.to_json()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    @classmethod
    def from_dict(cls, d: dict) -> "Trace":
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f"[trace] not a ringfire trace (expected \"format\": \"{FORMAT}\")")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"[trace] trace format version {d.get('version')!r}; this ringfire reads {FORMAT_VERSION}")
        entries = d.get("entries")
        if not isinstance(entries, list):
            raise ValueError("[trace] \"entries\" must be a list")
        entries = [{**_OPTIONAL_FIELDS, **e} if isinstance(e, dict) else e for e in entries]
        for i, e in enumerate(entries):
            missing = [f for f in FIELDS if f not in e] if isinstance(e, dict) else list(FIELDS)
            if missing:
                raise ValueError(f"[trace] entry {i} lacks {', '.join(missing)}")
            for f in FIELDS[3:]:
                if not isinstance(e[f], int) or e[f] < 0:
                    raise ValueError(f"[trace] entry {i}: {f} must be a non-negative integer, got {e[f]!r}")
            if e["kernel"] not in PRIMITIVE_RULES:
                raise ValueError(f"[trace] entry {i}: unknown kernel {e['kernel']!r}")
        return cls(entries, d.get("dry_run", False), d.get("seconds", 0.0), d.get("meta"))

    @classmethod
    def load(cls, path) -> "Trace":
        """Reads a trace saved as JSON by :meth:`save` (or ``ringfire trace run``)."""
        with open(path, encoding="utf-8") as f:
            try:
                d = json.load(f)
            except json.JSONDecodeError as err:
                raise ValueError(f"[trace] {path}: not JSON ({err})") from None
        return cls.from_dict(d)


def trace(dry_run: bool = False, **meta) -> Trace:
    """A context manager that records every backend call made inside it (see the module doc).

    One trace at a time per process; calls from every thread are counted.
    Keyword arguments are saved as notes in the trace's ``meta``.
    """
    return Trace(dry_run=dry_run, meta=meta)


def is_tracing() -> bool:
    return bool(_core.trace_open())


def _format(head: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in lines)) if lines else len(h) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    out.append("  ".join("-" * w for w in widths))
    for r in lines:
        out.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


def _version() -> str:
    try:
        return metadata.version("ringfire")
    except metadata.PackageNotFoundError:
        return "unknown"
