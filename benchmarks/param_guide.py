"""Numbers for docs/parameters.md: precision and one multiply's cost by N and scale (markdown table)."""
import time, numpy as np, ringfire as rf

def bits(got, want):
    return -np.log2(np.max(np.abs(got - want)))

rng = np.random.default_rng(0)
print("| N | coeff_bits | scale | levels | fresh bits | after x*y bits | MulRelinRescale ms | keys MB |")
for log_n, coeff, scale in [(13, [50, 40, 40, 60], 40), (13, [60, 30, 30, 60], 30), (14, [60]+[40]*6+[60], 40),
                            (14, [60]+[50]*5+[60], 50), (15, [60]+[40]*16+[60], 40), (16, [60]+[40]*30+[60], 40)]:
    ctx = rf.ckks.Context(poly_degree=2**log_n, coeff_bits=coeff, scale_bits=scale)
    sk, keys = ctx.keygen()
    x, y = rng.uniform(-1, 1, ctx.slots), rng.uniform(-1, 1, ctx.slots)
    a, b = ctx.encrypt(x, keys), ctx.encrypt(y, keys)
    fresh = bits(ctx.decrypt(a, sk), x)
    prod = a * b
    after = bits(ctx.decrypt(prod, sk), x * y)
    ts = []
    for _ in range(5):
        t = time.perf_counter(); a * b; ts.append(time.perf_counter() - t)
    kb = len(keys.relin.to_bytes()) + len(keys.public.to_bytes())
    print(f"| 2^{log_n} | {coeff} | 2^{scale} | {ctx.max_level} | {fresh:.1f} | {after:.1f} | {1000*np.median(ts):.1f} | {kb/2**20:.1f} |")
