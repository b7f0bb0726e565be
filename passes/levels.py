"""Graph-optimization levels, as in onnxruntime: -O0 nothing, -O1 basic, -O2 extended, -O3 all.

Each level is a tuple of pass names (onnxc.registry or xDSL upstream) run on the graph dialect
before lowering. The catalog of rewrite patterns (../shared/PASSES.md) fills these in.
"""

from __future__ import annotations

BASIC: tuple[str, ...] = ("cse", "dce")
EXTENDED: tuple[str, ...] = ()
LAYOUT_AND_MEMORY: tuple[str, ...] = ()

LEVELS: dict[int, tuple[str, ...]] = {
    0: (),
    1: BASIC,
    2: (*BASIC, *EXTENDED),
    3: (*BASIC, *EXTENDED, *LAYOUT_AND_MEMORY),
}


def graph_pipeline(opt_level: int) -> tuple[str, ...]:
    """The graph passes of one optimization level."""
    if opt_level not in LEVELS:
        raise ValueError(f"opt_level must be one of {sorted(LEVELS)}, got {opt_level}")
    return LEVELS[opt_level]
