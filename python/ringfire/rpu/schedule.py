"""From a dataflow graph to a B512 program: register allocation and instruction order.

Two emitters, mirroring seed 004 §VI-E (Fig. 7):

* :func:`emit_naive` -- the graph's own order (depth-first: each butterfly is
  followed at once by the shuffles that consume it) with round-robin register
  allocation. It knows nothing about the machine, so the busyboard stalls the
  front end on almost every dependent instruction.
* :func:`emit_scheduled` -- a greedy list scheduler driven by the cycle model
  itself (SPIRAL's "greedy instruction scheduler" against the busyboard). At
  every step it takes the ready operations of the oldest ``window`` groups
  ("rectangles"), tentatively assigns destination registers, asks the model when
  each could dispatch, and issues the earliest (ties: longest remaining
  latency path first). Registers are allocated at definition and freed after
  the last use; a dying source is reused as the destination in place; free
  registers are picked by the time the busyboard released them and, with
  several registers per VRF SRAM, away from the SRAMs the instruction already
  uses. Loads keep a small reserve of free registers so compute never starves.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections import deque

from .config import RpuConfig
from .cycle import CycleModel
from .isa import COMPUTE, LOADSTORE, NUM_VREGS, OPCODES, SHUFFLE, Instruction
from .ntt_graph import Node, NttGraph, scalar_registers


def to_instruction(node: Node, reg: dict[int, int]) -> Instruction:
    """The instruction for ``node`` once its values have physical registers ``reg``."""
    fmt = OPCODES[node.op].fmt
    f = dict(node.fields)
    d, s = [reg[v] for v in node.dests], [reg[v] for v in node.srcs]
    if fmt == "vmem":
        f["vd"] = d[0] if node.op == "vload" else s[0]
    elif fmt == "bfly":
        f.update(vd=d[0], vd1=d[1], vs=s[0], vt=s[1], vt1=s[2])
    elif fmt in ("vv", "shuf"):
        f.update(vd=d[0], vs=s[0], vt=s[1])
    elif fmt == "vs":
        f.update(vd=d[0], vs=s[0])
    return Instruction(node.op, **f)


def _last_uses(nodes: list[Node]) -> dict[int, int]:
    last = {}
    for i, node in enumerate(nodes):
        for v in node.srcs:
            last[v] = i
    return last


def emit_naive(graph: NttGraph) -> list[Instruction]:
    """Program order = graph order; registers handed out round-robin."""
    last = _last_uses(graph.nodes)
    free = deque(range(NUM_VREGS))
    reg: dict[int, int] = {}
    program = []
    for i, node in enumerate(graph.nodes):
        for v in node.dests:
            if not free:
                raise RuntimeError("[rpu.schedule] naive allocation ran out of vector registers")
            reg[v] = free.popleft()
        program.append(to_instruction(node, reg))
        for v in dict.fromkeys(node.srcs):
            if last[v] == i:
                free.append(reg[v])
    return program


class _ListScheduler:
    def __init__(self, graph: NttGraph, config: RpuConfig, window: int, lookahead: int):
        self.nodes, self.cfg = graph.nodes, config
        self.window, self.lookahead = window, lookahead
        self.model = CycleModel(config)
        n = len(self.nodes)
        producer = {v: i for i, node in enumerate(self.nodes) for v in node.dests}
        self.succs: list[list[int]] = [[] for _ in range(n)]
        self.npred = [0] * n
        for i, node in enumerate(self.nodes):
            preds = {producer[v] for v in node.srcs} | set(node.deps)
            self.npred[i] = len(preds)
            for p in preds:
                self.succs[p].append(i)
        self.uses_left: dict[int, int] = {}
        for node in self.nodes:
            for v in node.srcs:
                self.uses_left[v] = self.uses_left.get(v, 0) + 1
        self.prio = self._priorities()
        self.scalars = [scalar_registers(node) for node in self.nodes]
        self.group_left: dict[int, int] = {}
        for node in self.nodes:
            self.group_left[node.group] = self.group_left.get(node.group, 0) + 1
        self.group_order = sorted(self.group_left)
        self.oldest = 0
        self.reg: dict[int, int] = {}
        self.free: list[tuple[int, int]] = [(0, r) for r in range(NUM_VREGS)]   # (released at, register)

    def _priorities(self) -> list[int]:
        e, c = self.cfg.elements_per_lane, self.cfg
        est = {LOADSTORE: e + c.ls_latency, COMPUTE: e * c.mul_ii + c.mul_latency + c.add_latency,
               SHUFFLE: e + c.shuffle_latency}
        prio = [0] * len(self.nodes)
        for i in range(len(self.nodes) - 1, -1, -1):
            prio[i] = est[OPCODES[self.nodes[i].op].pipeline] + max((prio[s] for s in self.succs[i]), default=0)
        return prio

    def active_groups(self) -> set[int]:
        while self.oldest < len(self.group_order) and self.group_left[self.group_order[self.oldest]] == 0:
            self.oldest += 1
        return set(self.group_order[self.oldest:self.oldest + self.window])

    def _dying(self, node: Node) -> list[int]:
        """Source registers whose value dies at this node (reusable as its destinations)."""
        out, seen = [], set()
        for v in node.srcs:
            if v not in seen and self.uses_left[v] == node.srcs.count(v):
                out.append(self.reg[v])
            seen.add(v)
        return out

    def _pick_dests(self, node: Node, careful: bool) -> list[int] | None:
        need = len(node.dests)
        if not need:
            return []
        picks = self._dying(node)[:need]
        rest = need - len(picks)
        if rest > len(self.free):
            return None
        if not careful or self.cfg.regs_per_sram == 1:
            return picks + [r for _, r in self.free[:rest]]
        per = self.cfg.regs_per_sram
        used = {self.reg[v] // per for v in node.srcs} | {r // per for r in picks}
        future = self.model.sram
        now = self.model.fe_next
        chosen: list[int] = []
        for _ in range(rest):
            best, best_key = None, None
            for released, r in self.free:
                if r in chosen:
                    continue
                s = r // per
                key = (s in used, sum(1 for _, hi in future.get(s, ()) if hi > now), released)
                if best_key is None or key < best_key:
                    best, best_key = r, key
            chosen.append(best)
            used.add(best // per)
        return picks + chosen

    def _registers(self, i: int, dests: list[int]) -> tuple[list[str], list[str]]:
        node = self.nodes[i]
        reads = [f"v{self.reg[v]}" for v in node.srcs] + self.scalars[i][0]
        writes = [f"v{r}" for r in dests] + self.scalars[i][1]
        return reads, writes

    def run(self) -> list[Instruction]:
        ready: dict[int, list] = {g: [] for g in self.group_order}     # one priority heap per group
        for i in range(len(self.nodes)):
            if self.npred[i] == 0:
                ready[self.nodes[i].group].append((-self.prio[i], i))
        for heap in ready.values():
            heapq.heapify(heap)
        program = []
        while len(program) < len(self.nodes):
            active = self.active_groups()
            oldest = self.group_order[self.oldest] if self.oldest < len(self.group_order) else None
            best, best_key, best_group = None, None, None
            for g in sorted(active | {-1} if -1 in ready else active):
                heap = ready[g]
                looked = []
                while heap and len(looked) < self.lookahead:
                    looked.append(heapq.heappop(heap))
                for item in looked:
                    heapq.heappush(heap, item)
                    key = self._evaluate(item, g in (oldest, -1))
                    if key is not None and (best_key is None or key < best_key):
                        best, best_key, best_group = item, key, g
            if best is None:
                raise RuntimeError("[rpu.schedule] list scheduler found no issuable instruction "
                                   "(register pressure too high for this window)")
            heap = ready[best_group]
            heap.remove(best)
            heapq.heapify(heap)
            program.append(self._commit(best[1], ready))
        return program

    def _evaluate(self, item, oldest_group: bool):
        """(dispatch cycle, -priority, index) if the node can be issued now, else None."""
        i = item[1]
        node = self.nodes[i]
        dests = self._pick_dests(node, careful=False)
        if dests is None:
            return None
        if node.op == "vload":
            reserve = 1 if oldest_group else 8
            if len(self.free) - len(dests) < reserve:
                return None
        reads, writes = self._registers(i, dests)
        t, _ = self.model.probe_registers(reads, writes, OPCODES[node.op].pipeline)
        return (t, item[0], i)

    def _commit(self, i: int, ready) -> Instruction:
        node = self.nodes[i]
        dests = self._pick_dests(node, careful=True)
        dying = set(self._dying(node))
        for r in dests:
            if r not in dying:
                self.free = [fr for fr in self.free if fr[1] != r]
        for v, r in zip(node.dests, dests):
            self.reg[v] = r
        # reg[] now maps the destination values; sources are still mapped too
        instr = to_instruction(node, self.reg)
        self.model.issue(instr)
        for v in dict.fromkeys(node.srcs):
            self.uses_left[v] -= node.srcs.count(v)
            if self.uses_left[v] == 0:
                r = self.reg[v]
                if r not in dests:
                    name = f"v{r}"
                    released = max(self.model.busy_until.get(name, 0), self.model.read_until.get(name, 0))
                    insort(self.free, (released, r))
        self.group_left[node.group] -= 1
        for s in self.succs[i]:
            self.npred[s] -= 1
            if self.npred[s] == 0:
                heapq.heappush(ready[self.nodes[s].group], (-self.prio[s], s))
        return instr


def emit_scheduled(graph: NttGraph, config: RpuConfig, window: int = 2, lookahead: int = 32) -> list[Instruction]:
    """List-scheduled program for ``config`` (see the module docstring)."""
    return _ListScheduler(graph, config, window, lookahead).run()
