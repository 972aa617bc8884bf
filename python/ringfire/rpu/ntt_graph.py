"""The constant-geometry NTT as a dataflow graph of B512 operations on 512-wide vectors.

Algorithm (Pease / Korn-Lambiotte, seed 004 §V; derivation in rpu_anchors §d).
With ``y`` the current ``n``-element array, ``A = y[:n/2]``, ``B = y[n/2:]`` and
``tab[i] = psi^bitrev(i)`` (OpenFHE's table), forward stage ``s = 0 .. k-1`` is::

    W_s[e] = tab[2^s + (e mod 2^s)];  U = A + W_s*B;  V = A - W_s*B;  y = interleave(U, V)

and after ``k = log2 n`` stages ``y`` equals ``ringfire.ring.ntt`` (bit-reversed
output, no final permutation). On vectors (``m = n/512`` of them) stage ``s``
is, for each ``j < m/2``: one ``bfly`` on vectors ``j`` and ``j + m/2`` and the
twiddle vector ``W_s,j``, then ``unpklo``/``unpkhi`` produce vectors ``2j`` and
``2j+1``. Every stage has the same shape, which is why the machine needs only
these instructions. The inverse runs the stages backwards with ``pklo``/``pkhi``
(de-interleave) and ``gsbfly`` (``A = U + V``, ``B = (U - V) * W_s^-1``), then
multiplies by ``1/n`` (``vmulmods``).

Twiddle vectors: for ``2^s <= 512`` one vector, loaded in REPEATED mode (value
``s``; ``s = 0`` is the listing's broadcast); above, vector ``j`` is the
contiguous block ``tab[2^s + 512*(j mod 2^(s-9)) ...]``.

Memory plan (VDM words): buffer X = ``[0, n)`` (input), buffer Y = ``[n, 2n)``,
twiddle table = ``[2n, 3n)``; SDM words 0..4 hold the modulus, the three base
addresses and ``1/n``. ARF a0 = X, a1 = Y, a2 = table; MRF m0 = q; SRF s0 = 1/n.

Passes ("rectangles", seed 004 §V): when the ``m`` vectors fit in the register
file (``m <= resident_vectors``) the whole transform is one pass: load once,
run all stages in registers, store once. Otherwise the stages are cut into
passes of ``d = log2(group_vectors)`` stages; within a pass the vectors split
into independent groups of ``2^d`` (found by union-find over the pass's
butterflies), each loaded, run ``d`` stages deep and stored, ping-ponging X/Y.
The interleave of the last forward stage is done by two stride-2 stores and the
de-interleave of the first inverse stage by two stride-2 loads, so a 64K NTT has
exactly seed 004's 1024 butterflies and 15 x 128 = 1920 shuffles.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .isa import CONTIGUOUS, OPCODES, REPEATED, STRIDED, VECTOR_LENGTH, WORD_BYTES

BUF_X, BUF_Y, BUF_TWIDDLE = 0, 1, 2          # ARF registers a0, a1, a2
SDM_MODULUS, SDM_X, SDM_Y, SDM_TWIDDLE, SDM_NINV = 0, 1, 2, 3, 4


@dataclass
class Node:
    """One B512 operation on SSA vector values (registers are assigned later)."""
    op: str
    dests: tuple[int, ...] = ()
    srcs: tuple[int, ...] = ()
    fields: dict = field(default_factory=dict)   # address, rm, mode, value, rt
    group: int = -1                              # scheduling group (-1: preamble)
    deps: list[int] = field(default_factory=list)  # earlier nodes it must follow (memory order)


@dataclass
class NttGraph:
    n: int
    inverse: bool
    nodes: list[Node]
    output_buffer: int          # BUF_X or BUF_Y
    passes: list[list[int]]     # stages of each pass, in processing order
    num_values: int


def scalar_registers(node: Node) -> tuple[list[str], list[str]]:
    """(scalar registers read, written) by a node, as names like ``'m0'``, ``'a2'``."""
    fmt = OPCODES[node.op].fmt
    f = node.fields
    if fmt == "smem":
        return [], [{"sload": "s", "aload": "a", "mload": "m"}[node.op] + str(f["rt"])]
    if fmt == "vmem":
        return [f"a{f['rm']}"], []
    if fmt == "vs":
        return [f"s{f['rt']}", f"m{f['rm']}"], []
    if fmt in ("vv", "bfly"):
        return [f"m{f['rm']}"], []
    return [], []


class _Builder:
    def __init__(self, n: int, inverse: bool, twiddle_share: int):
        self.n, self.m, self.k = n, n // VECTOR_LENGTH, n.bit_length() - 1
        self.inverse, self.twiddle_share = inverse, twiddle_share
        self.nodes: list[Node] = []
        self.next_value = 0
        self.group = -1
        self.last_store: dict[tuple[int, int], int] = {}
        self.loads_since: dict[tuple[int, int], list[int]] = {}
        self.scalar_def: dict[str, int] = {}

    def value(self) -> int:
        self.next_value += 1
        return self.next_value - 1

    def emit(self, op: str, dests=(), srcs=(), **fields) -> int:
        node = Node(op, tuple(dests), tuple(srcs), fields, self.group)
        reads, writes = scalar_registers(node)
        node.deps.extend(self.scalar_def[r] for r in reads)      # e.g. every compute op after "mload m0"
        self.nodes.append(node)
        for r in writes:
            self.scalar_def[r] = len(self.nodes) - 1
        return len(self.nodes) - 1

    # ---- memory operations with dependency tracking -------------------------------
    def _slots(self, buf: int, word: int, mode: int) -> list[tuple[int, int]]:
        first = word // VECTOR_LENGTH
        return [(buf, first), (buf, first + 1)] if mode == STRIDED else [(buf, first)]

    def load(self, buf: int, word: int, mode: int = CONTIGUOUS, value: int = 0) -> int:
        v = self.value()
        idx = self.emit("vload", dests=(v,), address=word * WORD_BYTES, rm=buf, mode=mode, value=value)
        if buf != BUF_TWIDDLE:
            for slot in self._slots(buf, word, mode):
                if slot in self.last_store:
                    self.nodes[idx].deps.append(self.last_store[slot])
                self.loads_since.setdefault(slot, []).append(idx)
        return v

    def store(self, v: int, buf: int, word: int, mode: int = CONTIGUOUS, value: int = 0) -> None:
        idx = self.emit("vstore", srcs=(v,), address=word * WORD_BYTES, rm=buf, mode=mode, value=value)
        for slot in self._slots(buf, word, mode):
            deps = self.loads_since.pop(slot, [])
            if slot in self.last_store:
                deps.append(self.last_store[slot])
            self.nodes[idx].deps.extend(deps)
            self.last_store[slot] = idx

    def twiddle_word(self, stage: int, j: int) -> tuple[int, int, int]:
        """(table word, mode, value) of the twiddle vector for stage ``stage``, pair ``j``."""
        span = 1 << stage
        if span <= VECTOR_LENGTH:
            return span, REPEATED, stage
        return span + VECTOR_LENGTH * (j % (span // VECTOR_LENGTH)), CONTIGUOUS, 0

    # ---- the transform ------------------------------------------------------------
    def preamble(self) -> None:
        self.emit("mload", rt=0, address=SDM_MODULUS)
        for a, word in ((BUF_X, SDM_X), (BUF_Y, SDM_Y), (BUF_TWIDDLE, SDM_TWIDDLE)):
            self.emit("aload", rt=a, address=word)
        if self.inverse:
            self.emit("sload", rt=0, address=SDM_NINV)

    def groups_of_pass(self, stages: list[int]) -> list[list[int]]:
        """Independent vector groups of one pass (union-find over its butterflies), as input indices."""
        m = self.m
        parent = list(range(m))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        position = list(range(m))      # position -> original input index of the pass
        for _ in stages:
            new = [0] * m
            for j in range(m // 2):
                if self.inverse:        # (2j, 2j+1) -> (j, j + m/2)
                    a, b = position[2 * j], position[2 * j + 1]
                    new[j], new[j + m // 2] = a, b
                else:                   # (j, j + m/2) -> (2j, 2j+1)
                    a, b = position[j], position[j + m // 2]
                    new[2 * j], new[2 * j + 1] = a, b
                parent[find(a)] = find(b)
            position = new
        groups: dict[int, list[int]] = {}
        for v in range(m):
            groups.setdefault(find(v), []).append(v)
        return sorted(groups.values())

    def build(self, resident_vectors: int, group_vectors: int) -> NttGraph:
        k, m = self.k, self.m
        order = list(range(k - 1, -1, -1)) if self.inverse else list(range(k))
        if m <= resident_vectors:
            passes = [order]
        else:
            depth = max(1, group_vectors.bit_length() - 1)
            passes = [order[i:i + depth] for i in range(0, k, depth)]
        self.preamble()
        src, dst = BUF_X, BUF_Y
        group_id = 0
        for p, stages in enumerate(passes):
            for members in self.groups_of_pass(stages):
                self.group = group_id
                group_id += 1
                self.run_group(members, stages, src, dst, first=(p == 0), last=(p == len(passes) - 1))
            src, dst = dst, src
        return NttGraph(self.n, self.inverse, self.nodes, src, passes, self.next_value)

    def run_group(self, members, stages, src, dst, first, last) -> None:
        half = self.m // 2
        cur: dict[int, int] = {}
        strided_in = self.inverse and first        # first inverse stage: de-interleave by strided loads
        pairs_in: dict[int, tuple[int, int]] = {}
        if strided_in:
            for v in members:
                if v % 2 == 0:
                    pairs_in[v // 2] = (self.load(src, 2 * VECTOR_LENGTH * (v // 2), STRIDED, 1),
                                        self.load(src, 2 * VECTOR_LENGTH * (v // 2) + 1, STRIDED, 1))
        else:
            for v in members:
                cur[v] = self.load(src, VECTOR_LENGTH * v)
        strided_out: list[tuple[int, int, int]] = []
        for si, stage in enumerate(stages):
            final_stage = last and si == len(stages) - 1
            twiddles: dict[int, list] = {}
            new: dict[int, int] = {}
            if self.inverse:
                js = sorted(pairs_in) if pairs_in else sorted({v // 2 for v in cur})
            else:
                js = sorted(v for v in cur if v < half)
            for j in js:
                w = self.twiddle(twiddles, stage, j)
                if self.inverse:
                    if pairs_in:
                        uu, vv = pairs_in.pop(j)
                    else:
                        uu, vv = self.value(), self.value()
                        self.emit("pklo", dests=(uu,), srcs=(cur[2 * j], cur[2 * j + 1]))
                        self.emit("pkhi", dests=(vv,), srcs=(cur[2 * j], cur[2 * j + 1]))
                    a, b = self.value(), self.value()
                    self.emit("gsbfly", dests=(a, b), srcs=(uu, vv, w), rm=0)
                    new[j], new[j + half] = a, b
                else:
                    u, v = self.value(), self.value()
                    self.emit("bfly", dests=(u, v), srcs=(cur[j], cur[j + half], w), rm=0)
                    if final_stage:
                        strided_out.append((j, u, v))
                        continue
                    lo, hi = self.value(), self.value()
                    self.emit("unpklo", dests=(lo,), srcs=(u, v))
                    self.emit("unpkhi", dests=(hi,), srcs=(u, v))
                    new[2 * j], new[2 * j + 1] = lo, hi
            cur = new
        for j, u, v in strided_out:
            self.store(u, dst, 2 * VECTOR_LENGTH * j, STRIDED, 1)
            self.store(v, dst, 2 * VECTOR_LENGTH * j + 1, STRIDED, 1)
        for idx in sorted(cur):
            val = cur[idx]
            if self.inverse and last:
                scaled = self.value()
                self.emit("vmulmods", dests=(scaled,), srcs=(val,), rt=0, rm=0)
                val = scaled
            self.store(val, dst, VECTOR_LENGTH * idx)

    def twiddle(self, cache: dict, stage: int, j: int) -> int:
        """A twiddle vector value, shared by at most ``twiddle_share`` butterflies of one group-stage."""
        word, mode, value = self.twiddle_word(stage, j)
        entry = cache.get(word)
        if entry is None or entry[1] >= self.twiddle_share:
            entry = [self.load(BUF_TWIDDLE, word, mode, value), 0]
            cache[word] = entry
        entry[1] += 1
        return entry[0]


def build_ntt_graph(n: int, inverse: bool = False, resident_vectors: int = 32, group_vectors: int = 16,
                    twiddle_share: int = 4) -> NttGraph:
    """The dataflow graph of a forward (or inverse) NTT of size ``n`` (1K .. 64K)."""
    if not isinstance(n, int) or n < 2 * VECTOR_LENGTH or n > 65536 or n & (n - 1):
        raise ValueError(f"[rpu.codegen] n must be a power of two in [1024, 65536], got {n!r}")
    if group_vectors < 2 or group_vectors & (group_vectors - 1):
        raise ValueError(f"[rpu.codegen] group_vectors must be a power of two >= 2, got {group_vectors}")
    if twiddle_share < 1:
        raise ValueError(f"[rpu.codegen] twiddle_share must be >= 1, got {twiddle_share}")
    return _Builder(n, inverse, twiddle_share).build(resident_vectors, group_vectors)
