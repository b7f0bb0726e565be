"""How a GEMM kernel's grid of row blocks x column panels splits into parallel iterations.

A parallel loop runs in chunks (lowering/to_llvm/launch_ir.py: min(trips, 8 n) chunks of
trips / chunks iterations on n threads, the caller claiming them from the front and the
helpers from the back, runtime/pool_ir.py), and its region ends when the last chunk does.
Iterations of unequal work (a last row chunk with fewer blocks, column groups of 3 and 2
panels, a narrow tail panel run by some of them) or a trip count that does not divide into
the chunks leave one thread finishing alone: QDQ ResNet-50's 28 x 28 convs (9 row chunks x
2 groups = 18 trips in 16 chunks) kept two threads busy 91% of the region, its 14 x 14
ones 93%.

`grid_split` picks the row chunk and panel group sizes by the region's makespan, simulated
for equal threads claiming as the pool does: among the splits within SLACK of the best at
2 and 4 threads (the kernel is the same for every thread count) that have at least
MIN_ITERATIONS trips (so a thread running slower, a VM's second vCPU in a slow phase, hands
work to the other), the fewest panel groups (a thread then writes whole output rows, the
rows the next kernel, split the same way, reads on the same core: the caller claims from
the front), then the largest row chunks (each iteration streams its panels of B again).
The simulation is closed-form per chunk, a few milliseconds per grid. QDQ ResNet-50 on Zen
4, against the fixed rule before it (16-block chunks, groups of ceil(panels / ceil(16 /
chunks)) panels, the tail panels in a second region): T=2 -3.0 and -3.5% end to end (each
build compiled twice in one process, 15 alternating rounds), T=1 level (-0.1, +0.1%); per
kernel at T=2 the 28 x 28 and 14 x 14 convs -2 to -13%. The int8 GEMM (int8_gemm.py) uses
it; the f32 packed GEMM keeps its own measured row chunks (gemm_tiles.MIN_CHUNKS), not yet
measured against this split.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from onnxc.lowering.to_llvm.launch_ir import CHUNKS_PER_THREAD

MODELLED_THREADS = (2, 4)
"""Thread counts whose makespans a split is scored by (their mean busy fraction)."""
SLACK = 0.02
"""Busy fractions this close to the best count as equal (then fewer groups win)."""
MIN_ITERATIONS = 16
"""Trips wanted at least, where the grid has that many tiles."""


@dataclass(frozen=True)
class GridSplit:
    """`row_blocks` x (`panels` full panels + a `tail` of a panel's work) in iterations:
    iteration `it` runs row chunk it // groups (`per_chunk` row blocks, fewer in the last)
    over panel group it % groups (`per_group` full panels, fewer in the last, which also
    runs the tail panels)."""

    row_blocks: int
    panels: int
    tail: float
    per_chunk: int
    per_group: int

    @property
    def chunks(self) -> int:
        return -(-self.row_blocks // self.per_chunk)

    @property
    def groups(self) -> int:
        return -(-self.panels // self.per_group) if self.per_group else 1

    @property
    def trips(self) -> int:
        return self.chunks * self.groups

    def done_before(self, it: int) -> float:
        """Work of iterations [0, it), in row-block x panel units."""
        c, g = divmod(it, self.groups)
        rows_before = min(c * self.per_chunk, self.row_blocks)
        rows = min(self.per_chunk, self.row_blocks - rows_before)
        return rows_before * (self.panels + self.tail) + rows * min(g * self.per_group,
                                                                    self.panels)

    def busy(self, n: int) -> float:
        """Total work / (n * makespan) with n equal threads claiming as the pool does."""
        trips = self.trips
        chunks = min(trips, CHUNKS_PER_THREAD * n)
        work = [self.done_before((c + 1) * trips // chunks) - self.done_before(c * trips // chunks)
                for c in range(chunks)]
        free = [0.0] * n  # when each thread is next free; thread 0 is the caller
        front, back = 0, chunks - 1
        while front <= back:
            t = free.index(min(free))  # the first free thread (the caller on ties)
            if t == 0:
                free[0] += work[front]
                front += 1
            else:
                free[t] += work[back]
                back -= 1
        return sum(work) / (n * max(free))

    def balance(self) -> float:
        """The mean busy fraction at MODELLED_THREADS, what a split is scored by."""
        return sum(self.busy(n) for n in MODELLED_THREADS) / len(MODELLED_THREADS)


@lru_cache(maxsize=256)
def grid_split(row_blocks: int, panels: int, tail: float, max_chunk: int) -> GridSplit:
    """The split of `row_blocks` x (`panels` full panels + a `tail` of a panel's work,
    0 < tail <= 1 when N is not whole panels: the padded tail's width over NR) with row
    chunks of at most `max_chunk` blocks."""
    assert row_blocks >= 1 and panels >= 0 and (panels or tail)
    group_sizes = sorted({-(-panels // g) for g in range(1, panels + 1)} or {0})
    scored = [(split.balance(), split) for split in (
        GridSplit(row_blocks, panels, tail, per_chunk, per_group)
        for per_chunk in range(1, min(max_chunk, row_blocks) + 1) for per_group in group_sizes)]
    enough = [(b, s) for b, s in scored if s.trips >= MIN_ITERATIONS] or scored
    best = max(b for b, _ in enough)
    return min((s for b, s in enough if b >= best - SLACK),
               key=lambda s: (s.groups, -s.per_chunk))
