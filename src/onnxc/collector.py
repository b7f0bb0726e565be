"""Python's cyclic garbage collector, held off while a model compiles.

A compile builds hundreds of thousands of small objects that live until its end (xDSL ops,
blocks and attributes, which point at each other, and llvmlite instructions). Each full
collection walks all of them, and allocation triggers one every few hundred thousand
objects: on densenet121 that was about a third of graph-to-loops and of the LLVM IR
emission (4.2 -> 3.0 s and 7 -> 4 s with the collector off), about a tenth of ResNet-50's
and BERT's compile. So the compile runs with automatic collection off, and collects its own
objects once, explicitly, after the graph passes, whose rewrites leave the most garbage
(ops they replaced, and the weights of folded constants: ResNet-50's batch norms,
densenet121's 90,000 objects), so that the peak memory stays what it was. The collector is on again,
as the caller had it, when the compile returns or fails.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class CollectorPause:
    """What `collector_paused` yields: `collect` frees the compile's garbage so far."""

    def __init__(self, paused: bool):
        self.paused = paused

    def collect(self) -> None:
        """Collect what this compile has allocated so far (when this pause turned automatic
        collection off): with the collector off, that is all of generation 0. Not a full
        collection: in a long-lived process (a server, a test suite compiling a thousand
        models) that would walk the whole heap at every compile."""
        if self.paused:
            gc.collect(0)


@contextmanager
def collector_paused() -> Iterator[CollectorPause]:
    """Automatic garbage collection off for the block (unless the caller had it off)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield CollectorPause(paused)
    finally:
        if paused:
            gc.enable()


__all__ = ["CollectorPause", "collector_paused"]
