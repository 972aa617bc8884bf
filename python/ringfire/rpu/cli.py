"""``ringfire rpu asm|disasm|run|ntt|sweep`` -- the RPU model from the command line.

Hook into the main CLI with ``rpu_cli.register(subparsers)``; the parsed
arguments carry ``func``, so ``args.func(args)`` (or :func:`main`) runs them.
Standalone: ``python -m ringfire.rpu.cli ntt --n 65536 --json``.
Every command prints a readable summary, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .asm import assemble, disassemble, from_bytes, to_bytes
from .codegen import generate_ntt, run_ntt
from .config import RpuConfig
from .cycle import simulate
from .functional import Machine
from .sweep import SWEEP_BANKS, SWEEP_HPLES, hple_bank_sweep


def _int_list(text: str) -> list[int]:
    try:
        return [int(v, 0) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _add_config_args(p: argparse.ArgumentParser) -> None:
    d = RpuConfig()
    p.add_argument("--hples", type=int, default=d.hples, help=f"lanes (default {d.hples})")
    p.add_argument("--banks", type=int, default=d.banks, help=f"VDM banks (default {d.banks})")
    p.add_argument("--mul-latency", type=int, default=d.mul_latency)
    p.add_argument("--mul-ii", type=int, default=d.mul_ii)
    p.add_argument("--shuffle-latency", type=int, default=d.shuffle_latency)
    p.add_argument("--ls-latency", type=int, default=d.ls_latency)
    p.add_argument("--regs-per-sram", type=int, default=d.regs_per_sram)
    p.add_argument("--busy-reads", action="store_true", help="busyboard also blocks on registers being read")
    p.add_argument("--frequency", type=float, default=None, help="clock in Hz (default: from --banks)")


def _config(args) -> RpuConfig:
    return RpuConfig(hples=args.hples, banks=args.banks, mul_latency=args.mul_latency, mul_ii=args.mul_ii,
                     shuffle_latency=args.shuffle_latency, ls_latency=args.ls_latency,
                     regs_per_sram=args.regs_per_sram, busy_reads=args.busy_reads, frequency_hz=args.frequency)


def _read_program(path: str):
    data = Path(path).read_bytes()
    if path.endswith(".bin"):
        return from_bytes(data)
    return assemble(data.decode())


def _print(args, payload: dict, text: str) -> None:
    print(json.dumps(payload, indent=2) if args.json else text)


def cmd_asm(args) -> int:
    program = assemble(Path(args.source).read_text())
    out = args.output or str(Path(args.source).with_suffix(".bin"))
    Path(out).write_bytes(to_bytes(program))
    words = [f"{int.from_bytes(to_bytes([i]), 'little'):016x}" for i in program]
    _print(args, {"source": args.source, "output": out, "instructions": len(program), "bytes": 8 * len(program),
                  "words": words}, f"{args.source}: {len(program)} instructions -> {out} ({8 * len(program)} bytes)")
    return 0


def cmd_disasm(args) -> int:
    program = from_bytes(Path(args.binary).read_bytes())
    text = disassemble(program, listing=args.listing)
    _print(args, {"binary": args.binary, "instructions": len(program),
                  "assembly": disassemble(program).splitlines()}, text.rstrip("\n"))
    return 0


def cmd_run(args) -> int:
    program = _read_program(args.program)
    config = _config(args)
    machine = Machine()
    if args.sdm:
        machine.sdm_write(0, args.sdm)
    t0 = time.perf_counter()
    machine.run(program)
    report = simulate(program, config)
    payload = report.as_dict()
    payload.update(program=args.program, wall_seconds=time.perf_counter() - t0)
    if args.vreg is not None:
        payload["vreg"] = {"index": args.vreg, "values": [str(v) for v in machine.vreg(args.vreg)]}
    text = (f"{args.program}: {len(program)} instructions, {report.cycles} cycles, "
            f"{report.seconds * 1e6:.3f} us at {report.frequency_hz / 1e9:.2f} GHz\n"
            + "\n".join(f"  {p:<10} n={report.counts[p]:<6} util={u:6.1%}  busyboard stall="
                        f"{report.busyboard_stalls[p]} queue stall={report.queue_stalls[p]}"
                        for p, u in report.utilization.items()))
    _print(args, payload, text)
    return 0


def cmd_ntt(args) -> int:
    from .. import ring
    config = _config(args)
    t0 = time.perf_counter()
    prog = generate_ntt(args.n, inverse=args.inverse, optimized=not args.naive, config=config)
    t_gen = time.perf_counter() - t0
    q = ring.find_primes(args.bits, 1, args.n)[0]
    result = run_ntt(prog, q, seed=args.seed, functional=not args.no_verify)
    result.update(q=str(q), codegen_seconds=t_gen, wall_seconds=time.perf_counter() - t0,
                  paper_seconds=6.7e-6 if (args.n, config.hples, config.banks) == (65536, 128, 128) else None)
    if args.emit:
        Path(args.emit).write_text(disassemble(prog.program))
        result["emitted"] = args.emit
    text = (f"{'inverse' if args.inverse else 'forward'} NTT n={args.n}, {args.bits}-bit q, "
            f"{'naive' if args.naive else 'optimized'} code on ({config.hples} HPLEs, {config.banks} banks)\n"
            f"  cycles      {result['cycles']}  (n log2 n / HPLEs = {result['theoretical_cycles']}, "
            f"ratio {result['cycles'] / result['theoretical_cycles']:.2f})\n"
            f"  time        {result['seconds'] * 1e6:.3f} us at {result['frequency_hz'] / 1e9:.2f} GHz\n"
            f"  verified    {result['verified']} (vs {result['oracle']})\n"
            f"  counts      {result['instruction_counts']}\n"
            f"  utilization " + ", ".join(f"{k} {v:.1%}" for k, v in result['utilization'].items()) + "\n"
            f"  wall        {result['wall_seconds']:.2f} s")
    _print(args, result, text)
    return 0 if result["verified"] in (True, None) else 1


def cmd_sweep(args) -> int:
    base = _config(args)
    rows = hple_bank_sweep(args.n, args.sweep_hples, args.sweep_banks, optimized=not args.naive, base=base)
    lines = [f"{'HPLEs':>6} {'banks':>6} {'cycles':>8} {'us':>8} {'GHz':>5}"]
    lines += [f"{r['hples']:>6} {r['banks']:>6} {r['cycles']:>8} {r['seconds'] * 1e6:>8.3f} "
              f"{r['frequency_hz'] / 1e9:>5.2f}" for r in rows]
    _print(args, {"n": args.n, "optimized": not args.naive, "results": rows}, "\n".join(lines))
    return 0


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the ``rpu`` command (with asm, disasm, run, ntt, sweep) to an argparse subparsers object."""
    rpu = subparsers.add_parser("rpu", help="RPU / B512 model: assembler, simulators, NTT generator")
    sub = rpu.add_subparsers(dest="rpu_command", required=True)

    p = sub.add_parser("asm", help="assemble a .s file into a binary (8 bytes per instruction)")
    p.add_argument("source")
    p.add_argument("-o", "--output", help="binary path (default: SOURCE with .bin)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_asm)

    p = sub.add_parser("disasm", help="disassemble a binary")
    p.add_argument("binary")
    p.add_argument("--listing", action="store_true", help="show index and machine word per line")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_disasm)

    p = sub.add_parser("run", help="run a program (.s or .bin) functionally and through the cycle model")
    p.add_argument("program")
    p.add_argument("--sdm", type=_int_list, default=None, help="initial SDM words 0,1,... (e.g. moduli)")
    p.add_argument("--vreg", type=int, default=None, help="print this vector register afterwards")
    _add_config_args(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("ntt", help="generate, verify and time an NTT kernel")
    p.add_argument("--n", type=int, default=65536)
    p.add_argument("--bits", type=int, default=128, help="prime size, 2..128 (default 128)")
    p.add_argument("--naive", action="store_true", help="unscheduled program (seed 004 Fig. 7 baseline)")
    p.add_argument("--inverse", action="store_true")
    p.add_argument("--no-verify", action="store_true", help="skip the functional run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--emit", help="also write the program's assembly to this file")
    _add_config_args(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ntt)

    p = sub.add_parser("sweep", help="NTT cycles over HPLEs x banks (seed 004 Fig. 4)")
    p.add_argument("--n", type=int, default=65536)
    p.add_argument("--sweep-hples", type=_int_list, default=list(SWEEP_HPLES))
    p.add_argument("--sweep-banks", type=_int_list, default=list(SWEEP_BANKS))
    p.add_argument("--naive", action="store_true")
    _add_config_args(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sweep)
    return rpu


def main(args) -> int:
    """Runs parsed ``rpu`` arguments; errors (ValueError, OSError) -> message on stderr and exit code 2."""
    try:
        return args.func(args)
    except (ValueError, OSError, RuntimeError) as e:
        print(f"ringfire rpu: error: {e}", file=sys.stderr)
        return 2


def _standalone(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ringfire")
    register(parser.add_subparsers(dest="command", required=True))
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "rpu":
        argv = ["rpu"] + argv
    return main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(_standalone())
