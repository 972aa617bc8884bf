"""Markdown tables for BENCHMARKS.md from the JSON that ntt_gpu.py and
ckks_gpu.py write (so the document quotes the files, not a transcription).

    python benchmarks/gpu/report.py ntt_gpu.json ckks_gpu.json
"""

import json
import sys


def ntt_tables(data):
    rows = data["rows"]
    peak = data.get("copy_gb_per_s")
    out = [f"Device-to-device copy measured in the same run: {peak:.0f} GB/s (bytes read + written).", ""]
    out.append("| N | limbs | forward µs/limb | inverse µs/limb | product µs/limb | radix-2 forward µs/limb | speedup over radix-2 | forward GB/s (% of copy) |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    index = {(r["log_n"], r["limbs"], r["op"], r["kernel"]): r for r in rows}
    for log_n in sorted({r["log_n"] for r in rows}):
        for limbs in sorted({r["limbs"] for r in rows}):
            f = index.get((log_n, limbs, "ntt_forward", "shared"))
            if f is None:
                continue
            i = index[(log_n, limbs, "ntt_inverse", "shared")]
            p = index.get((log_n, limbs, "poly_multiply", "shared"))
            b = index[(log_n, limbs, "ntt_forward", "radix2")]
            pct = f"{f['pct_of_copy']:.0f} %" if f.get("pct_of_copy") is not None else "-"
            out.append(f"| 2^{log_n} | {limbs} | {f['us_per_limb']:.3f} | {i['us_per_limb']:.3f} | "
                       f"{p['us_per_limb']:.3f} | {b['us_per_limb']:.3f} | {b['us_per_call'] / f['us_per_call']:.1f}× | "
                       f"{f['gb_per_s']:.0f} ({pct}) |")
    return "\n".join(out)


def ckks_tables(data):
    out = [f"CPU: {data['threads']} threads of the GPU machine.", ""]
    out.append("| set | routine | CPU ms | GPU ms (synced) | GPU ms (16 queued) | speedup | NTT share of kernel time |")
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    for r in data["rows"]:
        out.append(f"| {r['set']} | {r['routine']} | {r['cpu_ms']:.2f} | {r['gpu_ms']:.3f} | {r['gpu_queued_ms']:.3f} | "
                   f"{r['speedup']:.0f}× | {100 * r['ntt_share']:.0f} % |")
    out.append("")
    for device, m in data.get("matmul", {}).items():
        out.append(f"- matMul 10×9×8 at N=2^13 on {device}: {m['ms']:.0f} ms (max error {m['max_error']:.1e})")
    if data.get("streams"):
        base = data["streams"][0]["ops_per_s"]
        out.append("- MulLinRS throughput with k contexts (one stream and one host thread each), seed000 set: " +
                   ", ".join(f"{s['streams']}: {s['ops_per_s']:.0f}/s ({s['ops_per_s'] / base:.2f}×)"
                             for s in data["streams"]))
    return "\n".join(out)


def kernel_breakdown(data, set_name, routine):
    row = next(r for r in data["rows"] if r["set"] == set_name and r["routine"] == routine)
    out = [f"| kernel ({set_name} {routine}) | launches per op | µs per op | share |", "| --- | --- | --- | --- |"]
    for k in row["by_kernel"][:10]:
        out.append(f"| {k['name']} | {k['count'] / 5:.0f} | {k['total_ms'] / 5 * 1e3:.0f} | {100 * k['share']:.0f} % |")
    return "\n".join(out)


def main(argv):
    for path in argv:
        data = json.load(open(path))
        if "copy_gb_per_s" in data:
            print(ntt_tables(data))
        else:
            print(ckks_tables(data))
            sets = {r["set"] for r in data["rows"]}
            for name, routine in (("n16l24", "MulLin"), ("n16l45", "MulLinRS")):
                if name in sets:
                    print()
                    print(kernel_breakdown(data, name, routine))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
