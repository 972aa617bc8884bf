"""Projecting a trace onto RPU chips (seed 003 §V): tiles, I/O models and the derating rule.

>>> import ringfire as rf
>>> with rf.trace(dry_run=True) as t:                      # doctest: +SKIP
...     ...                                                # a real workload
>>> p = rf.rpu.project(t, config="model2", io="hbm2")     # doctest: +SKIP
>>> print(p.table())                                      # doctest: +SKIP

The model, as seed 003 describes its own:

* **Work** (priced by :func:`ringfire.costing.price`, the one cost model) is a count of ring operations on N-coefficient towers -- NTT,
  inverse NTT, ringAdd, ringMult, automorphisms, word moves
  (:meth:`ringfire.tracing.Trace.primitives` makes them from a trace).
* **Cost** of each at its size, per tile: ``costs="model"`` runs the code
  generators and the cycle model on the tile (``codegen.generate_ntt``,
  ``elementwise.generate``; cached); ``costs="seed003"`` takes the
  published latencies (RA = RM = 1.73 us, NTT 9.15 / 12.3 / 8 us at 64K,
  scaled by n log n or n to other sizes). The RPU has no permutation
  instruction; an automorphism is costed as one copy (load + store) of the
  tower, a lower bound.
* **Tiles** share the work evenly (seed 003: "allocating the computational
  load evenly across all RPUs").
* **I/O**: every ring multiply takes at least the time to load or store
  one tower vector (N 128-bit words) over the chip interface -- seed 003's
  conservative derating rule. The I/O models are seed 003's: ideal, LVDS
  (250 GB/s, DDR with 2k pins), one HBM2 (460.8 GB/s) and two HBM2 (921.6
  GB/s, one tile fewer to make room).

Configurations (``config=``): ``model1`` (TREBUCHET tile v1: one vector
register per VRF SRAM, 10 tiles), ``model2`` (v2: four per SRAM, 14 tiles),
``phase2`` (v2 with the ideal 16k-cycle NTT, 14 tiles), or any
:class:`RpuConfig` with ``tiles=``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from ..costing import price
from ..tracing import PRIMITIVES
from .config import RpuConfig, trebuchet_tile

WORD_BYTES_RPU = 16   # one 128-bit RPU word per coefficient

# Seed 003 §V: configurations, I/O models (bytes/s) and its published numbers.
CONFIGS = {
    "model1": {"tile": 1, "tiles": 10, "ntt_seed003_us": 9.15, "ideal_ntt": False},
    "model2": {"tile": 2, "tiles": 14, "ntt_seed003_us": 12.3, "ideal_ntt": False},
    "phase2": {"tile": 2, "tiles": 14, "ntt_seed003_us": 8.0, "ideal_ntt": True},
}
IO_MODELS = {
    "ideal": {"bandwidth": math.inf, "tiles_lost": 0, "name": "Ideal"},
    "lvds": {"bandwidth": 250e9, "tiles_lost": 0, "name": "LVDS2k"},
    "hbm2": {"bandwidth": 460.8e9, "tiles_lost": 0, "name": "1xHBM2"},
    "2xhbm2": {"bandwidth": 921.6e9, "tiles_lost": 1, "name": "2xHBM2"},
}
SEED003_RING_US = 1.73   # RA = RM at 64K (seed 003 §V-C)
# Table 1 (s per logistic-regression iteration): (no bootstrapping, with bootstrapping).
SEED003_TABLE1 = {
    ("model1", "ideal"): (0.110, 3.650), ("model2", "ideal"): (0.091, 2.912), ("phase2", "ideal"): (0.074, 2.495),
    ("model1", "lvds"): (0.153, 5.370), ("model2", "lvds"): (0.122, 4.141), ("phase2", "lvds"): (0.105, 3.724),
    ("model1", "hbm2"): (0.125, 4.233), ("model2", "hbm2"): (0.102, 3.329), ("phase2", "hbm2"): (0.084, 2.912),
    ("model1", "2xhbm2"): (0.122, 4.055), ("model2", "2xhbm2"): (0.098, 3.136), ("phase2", "2xhbm2"): (0.080, 2.687),
}


@functools.lru_cache(maxsize=None)
def model_cost(primitive: str, n: int, config: RpuConfig, ideal_ntt: bool = False) -> float:
    """Seconds of one ``primitive`` at ring size ``n`` on one tile, from the code generators and cycle model.

    ``move_words`` is per word (a 64K copy divided by 64K). Sizes outside
    the generators' 1K..64K are scaled from the nearest size (n log n for
    transforms, n otherwise).
    """
    from .codegen import generate_ntt
    from .cycle import simulate
    from .elementwise import generate

    if primitive == "move_words":
        return model_cost("automorphism", 65536, config) / 65536
    if n > 65536 or n < 1024:
        ref = 65536 if n > 65536 else 1024
        scale = (n * math.log2(n)) / (ref * math.log2(ref)) if primitive in ("ntt", "intt") else n / ref
        return scale * model_cost(primitive, ref, config, ideal_ntt)
    if primitive in ("ntt", "intt"):
        if ideal_ntt:
            return n * int(math.log2(n)) / config.hples / config.clock_hz
        return simulate(generate_ntt(n, inverse=primitive == "intt", config=config).program, config).seconds
    kernel = {"add": "add", "mult": "mult", "automorphism": "copy"}.get(primitive)
    if kernel is None:
        raise ValueError(f"[rpu.project] unknown primitive {primitive!r}; one of {', '.join(PRIMITIVES)}")
    return simulate(generate(kernel, n).program, config).seconds


def seed003_cost(primitive: str, n: int, config_name: str) -> float:
    """Seconds of one ``primitive`` from seed 003's published 64K latencies, scaled to ``n``."""
    if primitive in ("ntt", "intt"):
        return CONFIGS[config_name]["ntt_seed003_us"] * 1e-6 * (n * math.log2(n)) / (65536 * 16)
    if primitive in ("add", "mult", "automorphism"):
        return SEED003_RING_US * 1e-6 * n / 65536
    if primitive == "move_words":
        return SEED003_RING_US * 1e-6 / 65536
    raise ValueError(f"[rpu.project] unknown primitive {primitive!r}; one of {', '.join(PRIMITIVES)}")


@dataclass
class Projection:
    """Projected time of a workload on one chip configuration and I/O model."""
    config: str
    io: str
    tiles: int
    costs: str
    seconds: float
    ideal_seconds: float
    rows: list = field(default_factory=list)   # per (primitive, n): count, seconds each, total

    @property
    def derate(self) -> float:
        """Slow-down relative to the ideal I/O model (seed 003's "% derate")."""
        return self.seconds / self.ideal_seconds - 1 if self.ideal_seconds else 0.0

    def as_dict(self) -> dict:
        return {"config": self.config, "io": self.io, "tiles": self.tiles, "costs": self.costs,
                "seconds": self.seconds, "ideal_seconds": self.ideal_seconds, "derate": self.derate,
                "rows": self.rows}

    def table(self) -> str:
        head = f"{self.config} / {IO_MODELS[self.io]['name']} ({self.tiles} tiles, {self.costs} costs)"
        lines = [head, f"{'primitive':<13}{'n':>7}{'count':>15}{'each (us)':>11}{'I/O (us)':>10}{'total (s)':>11}"]
        for r in self.rows:
            lines.append(f"{r['primitive']:<13}{r['n']:>7}{r['count']:>15,}{r['each'] * 1e6:>11.3f}"
                         f"{r['io_each'] * 1e6:>10.3f}{r['total']:>11.4g}")
        lines.append(f"time {self.seconds:.4g} s on {self.tiles} tiles; ideal I/O {self.ideal_seconds:.4g} s; "
                     f"derate {100 * self.derate:.0f}%")
        return "\n".join(lines)


def project(workload, config="model2", io: str = "ideal", tiles: int | None = None,
            costs: str = "model") -> Projection:
    """Projects ``workload`` (a :class:`~ringfire.tracing.Trace` or ``{(primitive, n): count}``) onto RPU tiles.

    ``config``: ``model1``, ``model2``, ``phase2`` or an :class:`RpuConfig`
    (then ``tiles`` is required). ``io``: one of :data:`IO_MODELS`.
    ``costs``: ``model`` (cycle model) or ``seed003`` (published latencies;
    named configurations only).
    """
    if io not in IO_MODELS:
        raise ValueError(f"[rpu.project] io must be one of {', '.join(IO_MODELS)}, got {io!r}")
    if costs not in ("model", "seed003"):
        raise ValueError(f"[rpu.project] costs must be 'model' or 'seed003', got {costs!r}")
    if isinstance(config, str):
        if config not in CONFIGS:
            raise ValueError(f"[rpu.project] config must be one of {', '.join(CONFIGS)} or an RpuConfig, got {config!r}")
        name, spec = config, CONFIGS[config]
        tile, base_tiles, ideal_ntt = trebuchet_tile(spec["tile"]), spec["tiles"], spec["ideal_ntt"]
    elif isinstance(config, RpuConfig):
        if costs == "seed003":
            raise ValueError("[rpu.project] costs='seed003' needs a named configuration (model1, model2, phase2)")
        name, tile, base_tiles, ideal_ntt = "custom", config, tiles, False
    else:
        raise TypeError(f"[rpu.project] config must be a name or an RpuConfig, got {type(config).__name__}")
    if tiles is not None:
        base_tiles = tiles
    if not isinstance(base_tiles, int) or base_tiles < 1:
        raise ValueError(f"[rpu.project] tiles must be a positive integer, got {base_tiles!r}")
    n_tiles = base_tiles - IO_MODELS[io]["tiles_lost"]
    if n_tiles < 1:
        raise ValueError(f"[rpu.project] the {io} model gives up a tile; {base_tiles} leaves none")
    bandwidth = IO_MODELS[io]["bandwidth"]

    def tile_cost(prim: str, n: int) -> float:
        return model_cost(prim, n, tile, ideal_ntt) if costs == "model" else seed003_cost(prim, n, name)

    def io_cost(prim: str, n: int) -> float:
        # Seed 003's derating: a ring multiply lasts at least one tower's load or store over the chip I/O.
        return n * WORD_BYTES_RPU / bandwidth if prim == "mult" else 0.0

    chip = price(workload, lambda prim, n: max(tile_cost(prim, n), io_cost(prim, n)) / n_tiles)
    ideal = price(workload, lambda prim, n: tile_cost(prim, n) / base_tiles)
    rows = [dict(r, each=tile_cost(r["primitive"], r["n"]), io_each=io_cost(r["primitive"], r["n"]))
            for r in chip.rows]
    return Projection(name, io, n_tiles, costs, chip.seconds, ideal.seconds, rows)


def table1(workloads: dict, costs: str = "model", configs=None, ios=None) -> list[dict]:
    """Seed 003's Table 1 for ``workloads`` ({column name: workload}): one row per I/O model x configuration.

    ``configs`` / ``ios`` narrow the rows (default: all of :data:`CONFIGS` and :data:`IO_MODELS`).
    Each row holds the tiles and, per column, the seconds and the derate.
    """
    out = []
    for io in ios or IO_MODELS:
        for config in configs or CONFIGS:
            row = {"config": config, "io": io}
            for column, workload in workloads.items():
                p = project(workload, config=config, io=io, costs=costs)
                row.update({column: p.seconds, column + "_derate": p.derate, "tiles": p.tiles})
            out.append(row)
    return out


def seed003_workload() -> dict:
    """Seed 003's logistic-regression iteration as ring-operation counts at 64K, with and without bootstrapping.

    Seed 003 publishes no counts, only the workload's description (BGV,
    N = 2^16, 3 towers, ~30 during 51 functional bootstraps per iteration)
    and Table 1. Under this module's model, Table 1's ideal rows are linear
    in the counts: Model 2 and Phase 2 differ only in the NTT latency (12.3
    vs 8 us on 14 tiles), which gives the NTT count; either then gives the
    ring-operation count; Model 1's LVDS row gives how many of those are
    multiplies. Those three cells of each column are inputs; the other nine
    are predictions (``docs/projection.md`` compares them).
    """
    out = {}
    for column, idx in (("no_bootstrap", 0), ("bootstrap", 1)):
        t_model2 = SEED003_TABLE1[("model2", "ideal")][idx]
        t_phase2 = SEED003_TABLE1[("phase2", "ideal")][idx]
        tiles = CONFIGS["model2"]["tiles"]
        ntt = tiles * (t_model2 - t_phase2) / ((CONFIGS["model2"]["ntt_seed003_us"] - 8.0) * 1e-6)
        ring = (tiles * t_phase2 - ntt * 8.0e-6) / (SEED003_RING_US * 1e-6)
        lvds_extra = (SEED003_TABLE1[("model1", "lvds")][idx] - SEED003_TABLE1[("model1", "ideal")][idx]) \
            * CONFIGS["model1"]["tiles"]
        io_each = 65536 * WORD_BYTES_RPU / IO_MODELS["lvds"]["bandwidth"]
        mult = min(ring, lvds_extra / (io_each - SEED003_RING_US * 1e-6))
        out[column] = {("ntt", 65536): round(ntt), ("add", 65536): round(ring - mult), ("mult", 65536): round(mult)}
    return out
