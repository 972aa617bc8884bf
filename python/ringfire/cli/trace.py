"""``ringfire trace run`` and ``ringfire project``: record what a script asks of the hardware, and cost it on RPU chips.

    ringfire trace run [-o trace.json] [--dry-run] my_script.py [script args...]   # options before the script
    ringfire project trace.json [more.json a.json+b.json ...] [--config model2] [--io hbm2] [--json] [--plot out.png]
    ringfire project --seed003 [trace.json] [--costs seed003]   # seed 003's workload (and a real run of it) against its Table 1
    ringfire project --table2                          # seed 003's Table 2, CPU latencies measured here
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from pathlib import Path

from .. import _core
from ..rpu import projection
from ..rpu.cpu_compare import format_table2, table2
from ..tracing import Trace, trace


def cmd_trace(args) -> int:
    saved_argv = sys.argv
    sys.argv = [args.script, *args.script_args]
    exit_code = 0
    try:
        with trace(dry_run=args.dry_run, script=args.script) as t:
            try:
                runpy.run_path(args.script, run_name="__main__")
            except SystemExit as e:   # a script that ends with sys.exit(): keep its trace and its status
                exit_code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved_argv
    if args.output:
        t.save(args.output)
    out = sys.stderr if not args.json else sys.stdout
    if args.json:
        print(t.to_json())
    else:
        print(f"\n{t!r}", file=out)
        print(t.table(args.by), file=out)
        if args.output:
            print(f"saved to {args.output}", file=out)
    return exit_code


def _workloads(args) -> dict:
    """One column per trace argument; ``a.json+b.json`` is one column of both traces' calls.
    ``--seed003``: the counts solved from seed 003's Table 1 first, then the traces given (a real
    run of its workload, benchmarks/fixed_point_logreg.py's trace), set beside the same cells."""
    columns = projection.seed003_workload() if args.seed003 else {}
    if not args.traces and not args.seed003:
        raise ValueError("give a trace file (from `ringfire trace run ... -o trace.json`), --seed003 or --table2")
    for spec in args.traces:
        parts = [Trace.load(path) for path in spec.split("+")]
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        name = "+".join(Path(path).stem for path in spec.split("+"))
        if name in columns:
            raise ValueError(f"two columns would be named {name!r} (a trace file's name, or one of --seed003's "
                             f"{list(projection.seed003_workload())}): rename the file")
        columns[name] = total
    return columns


def cmd_project(args) -> int:
    if args.cpu:
        return _project_cpu(args)
    if args.table2:
        rows = table2()
        print(json.dumps(rows, indent=2) if args.json else format_table2(rows))
        return 0
    workloads = _workloads(args)
    configs = list(projection.CONFIGS) if args.config == "all" else [args.config]
    ios = list(projection.IO_MODELS) if args.io == "all" else [args.io]
    rows = projection.table1(workloads, costs=args.costs, configs=configs, ios=ios)
    if args.seed003:
        for row in rows:
            for column in workloads:
                # A traced iteration is compared with the cells of a whole iteration, bootstraps included.
                with_bootstraps = column != "no_bootstrap"
                row[column + "_seed003"] = projection.SEED003_TABLE1[(row["config"], row["io"])][with_bootstraps]
    if args.json:
        print(json.dumps({"costs": args.costs, "rows": rows}, indent=2))
    else:
        print(_format_rows(rows, list(workloads), args.seed003, args.costs))
        if len(configs) == 1 and len(ios) == 1 and not args.seed003:
            for workload in workloads.values():
                print()
                print(projection.project(workload, config=configs[0], io=ios[0], costs=args.costs).table())
    if args.plot:
        _plot(rows, list(workloads), args.plot, args.seed003)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _project_cpu(args) -> int:
    """Prices each trace on costs measured on this CPU now, beside the trace's own recorded time."""
    from ..costing import measure_cpu_costs, price

    workloads = _workloads(args)
    sizes = sorted({n for w in workloads.values() for (_, n) in w.primitives() if n})
    table = measure_cpu_costs(sizes)
    out = []
    for column, workload in workloads.items():
        priced = price(workload, table)
        recorded = None if workload.dry_run else workload.seconds
        out.append({"trace": column, "priced_seconds": priced.seconds, "recorded_seconds": recorded,
                    "rows": priced.rows})
        if not args.json:
            note = f"; the traced run took {recorded:.4g} s" if recorded else " (a dry run: no recorded time)"
            print(f"{column}: {priced.seconds:.4g} s priced on this CPU ({_core.num_threads()} threads){note}")
            print(priced.table())
    if args.json:
        print(json.dumps({"costs": "cpu", "table": {f"{p}@{n}": v for (p, n), v in table.items()}, "traces": out},
                         indent=2))
    return 0


def _format_rows(rows, columns, seed003: bool, costs: str) -> str:
    widths = {c: max(12, len(c) + 6) for c in columns}
    head = f"{'config':<8}{'I/O':<8}{'tiles':>6}"
    for c in columns:
        head += f"{c + ' (s)':>{widths[c]}}{'derate':>8}" + (f"{'seed 003':>10}{'diff':>8}" if seed003 else "")
    lines = [f"projected seconds ({costs} costs)", head]
    for r in rows:
        line = f"{r['config']:<8}{projection.IO_MODELS[r['io']]['name']:<8}{r['tiles']:>6}"
        for c in columns:
            line += f"{r[c]:>{widths[c]}.4g}{100 * r[c + '_derate']:>7.0f}%"
            if seed003:
                line += f"{r[c + '_seed003']:>10.3f}{100 * (r[c] / r[c + '_seed003'] - 1):>+7.1f}%"
        lines.append(line)
    return "\n".join(lines)


def _plot(rows, columns, path: str, seed003: bool) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'ringfire[plot]'") from None
    ios = list(dict.fromkeys(r["io"] for r in rows))
    configs = list(dict.fromkeys(r["config"] for r in rows))
    fig, axes = plt.subplots(1, len(columns), figsize=(6 * len(columns), 4), squeeze=False)
    width = 0.8 / len(configs)
    for ax, column in zip(axes[0], columns):
        for k, config in enumerate(configs):
            xs = [i + (k - (len(configs) - 1) / 2) * width for i in range(len(ios))]
            vals = [next(r[column] for r in rows if r["io"] == io and r["config"] == config) for io in ios]
            ax.bar(xs, vals, width, label=f"{config} (projected)")
            if seed003:
                pub = [next(r[column + "_seed003"] for r in rows if r["io"] == io and r["config"] == config)
                       for io in ios]
                ax.plot(xs, pub, "k_", markersize=14, label="seed 003 Table 1" if k == 0 else None)
        ax.set_xticks(range(len(ios)), [projection.IO_MODELS[io]["name"] for io in ios])
        ax.set_ylabel("seconds")
        ax.set_title(column.replace("_", " "))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def register(sub) -> None:
    t = sub.add_parser("trace", help="record the backend calls of a Python script (for `ringfire project`)")
    tsub = t.add_subparsers(dest="trace_command", required=True)
    run = tsub.add_parser("run", help="run a script under a trace")
    run.add_argument("script", help="the Python script to run (trace options go before it, its own after it)")
    run.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    run.add_argument("-o", "--output", help="save the trace: JSON, or CSV when the name ends in .csv")
    run.add_argument("--dry-run", action="store_true",
                     help="record the calls without running them (fast, values meaningless: do not decrypt)")
    run.add_argument("--by", choices=["primitive", "kernel", "label"], default="primitive",
                     help="summary printed at the end (default: ring operations per operation)")
    run.add_argument("--json", action="store_true", help="print the trace as JSON on stdout")
    run.set_defaults(func=cmd_trace)

    p = sub.add_parser("project", help="project a trace onto RPU chips (seed 003 Tables 1 and 2)")
    p.add_argument("traces", nargs="*", metavar="trace",
                   help="traces saved by `ringfire trace run -o`, one column each; a.json+b.json adds two")
    p.add_argument("--seed003", action="store_true", help="seed 003's LR workload solved from its Table 1, and the traces given beside it, against the table")
    p.add_argument("--table2", action="store_true",
                   help="seed 003's Table 2: ringAdd/ringMult/NTT at 64K measured on this CPU vs the RPU")
    p.add_argument("--config", "--rpu", dest="config", default="all", choices=["all", *projection.CONFIGS],
                   help="RPU configuration (default: all)")
    p.add_argument("--io", default="all", choices=["all", *projection.IO_MODELS], help="I/O model (default: all)")
    p.add_argument("--costs", default="model", choices=["model", "seed003"],
                   help="kernel latencies from the cycle model (default) or seed 003's published ones")
    p.add_argument("--cpu", action="store_true",
                   help="price the traces on kernel costs measured on this CPU now (beside the traced run's time)")
    p.add_argument("--plot", help="write a bar chart (PNG) of the projected times")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_project)
