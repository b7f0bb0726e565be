"""Run-time sizes of a model compiled with symbolic dimensions: binding, checks, buffers.

A model whose inputs have symbolic dimensions (`[1, "seq", 768]`) is compiled once; each run
binds every size symbol to the size the inputs give it, checks that the inputs agree (two
inputs naming `seq` must have the same size there, static dimensions must match), and that
every buffer the run needs fits onnxc's allocation limit, all in Python integers before
native code sees a pointer. The native entry then reads the symbols' values from its `dims`
buffer (dialects/entry_abi.py), and its buffers whose size depends on them live in a dynamic
arena that this layer sizes from the same polynomials the compiler placed them with
(lowering/plan_memory.py).

A loop that runs until its data says stop may return what it collected (scan outputs whose
length is its count: `run_symbols`). The caller cannot know that length beforehand: it
allocates those outputs with a capacity of rows, the entry writes the count back into its
`dims` entry, and when the count is larger the run is repeated with that many rows (a model
is a pure function of its inputs). The capacity is kept, so a model that returns 100 tokens
re-runs once, not on every call.

Symbols stand for sizes of at least 0: a decoder's first step has a KV cache of length 0.
What the compiler's shape rules needed of the sizes (a MatMul's inner dimensions agree, a
convolution's input is at least its window) the model checks at the start of the run
(graph.check_sizes, from the import's guards).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from onnxc.dialects.size_substitution import monotone_upper
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import Dim, SymbolicDimError, SymDim
from onnxc.errors import InvalidInputError
from onnxc.resource_limits import check_allocation, check_tensor

_ALIGNMENT = 64
INITIAL_CAPACITY = 16
"""Rows first allocated for an output of run-time length (grown to what a run needed)."""
_PLAN_CACHE = 256
"""Run plans kept per model (by input shapes); beyond that the cache starts over."""


def parse_spec_dim(d: int | str) -> Dim:
    """A spec's dimension: an int, or a polynomial in the symbols written as text."""
    return d if isinstance(d, int) else parse_dim(d)


@dataclass(frozen=True)
class SymbolicSignature:
    """What a run of a symbolic model binds and allocates."""

    symbols: tuple[str, ...]
    """in the order of the entry's `dims` buffer"""
    dynamic_slots: tuple[str, ...]
    """byte size of each slot of the dynamic arena (polynomials as text)"""
    run_symbols: tuple[str, ...] = ()
    """the last of `symbols`: sizes the run defines and gives back (NonZero's count, a
    loop's; entry_abi.RUN_SYMBOLS_ATTR)"""
    separable_batch: str | None = None
    """the batch of a batch-separable model compiled with its batch symbolic: a run with no
    samples has empty outputs (without running native code), as a per-sample model's"""
    run_bounds: tuple[str, ...] = ()
    """per run symbol, its bound as a size ("" for none: a capacity the caller grows)"""
    plans: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    """run plans by the inputs' shapes (`plan`); a run looks its key up here first"""

    def __post_init__(self) -> None:
        if self.run_symbols and self.symbols[-len(self.run_symbols):] != self.run_symbols:
            raise SymbolicDimError("the run's symbols must be the last of the dims buffer")
        bounds = dict(zip(self.run_symbols,
                          (parse_dim(b) if b else None for b in self.run_bounds)))
        for name, bound in bounds.items():
            known = self.symbols[:self.symbols.index(name)]
            if isinstance(bound, SymDim) and not bound.symbols() <= set(known):
                raise SymbolicDimError(f"the bound of '{name}' names a later symbol")
        object.__setattr__(self, "_bounds", bounds)
        slots = [parse_dim(slot) for slot in self.dynamic_slots]
        for text, value in zip(self.dynamic_slots, slots):
            if isinstance(value, SymDim) and not value.symbols() <= set(self.symbols):
                raise SymbolicDimError(f"slot size {text} names an unknown symbol")
        object.__setattr__(self, "_slots", slots)
        object.__setattr__(self, "_parsed", {})

    def _dims(self, shape: tuple) -> tuple[Dim, ...]:
        """A spec's shape with its text dimensions parsed (once per spec: runs are hot)."""
        parsed = self._parsed.get(shape)  # type: ignore[attr-defined]
        if parsed is None:
            parsed = tuple(parse_spec_dim(d) for d in shape)
            self._parsed[shape] = parsed  # type: ignore[attr-defined]
        return parsed

    def _room(self, shape: tuple) -> tuple[Dim, ...]:
        """A spec's shape as the room its buffer needs while the run symbols are still
        capacities (size_substitution.monotone_upper; once per spec, as `_dims`)."""
        key = ("room", shape)
        room = self._parsed.get(key)  # type: ignore[attr-defined]
        if room is None:
            room = tuple(monotone_upper(d, self.run_symbols) for d in self._dims(shape))
            if None in room:  # the lowering refuses such an output (convert_graph_to_loops.room)
                raise SymbolicDimError(f"no room for an output of shape {_describe(shape)}")
            self._parsed[key] = room  # type: ignore[attr-defined]
        return room

    def bind(self, specs: Sequence, arrays: Sequence[np.ndarray]) -> dict[str, int]:
        """Each symbol's size in this run, from the inputs' shapes (InvalidInputError when
        the inputs disagree with the specs or with each other)."""
        values: dict[str, int] = {}
        where: dict[str, str] = {}
        derived: list[tuple[str, int, Dim, int]] = []
        for spec, array in zip(specs, arrays):
            shape = array.shape
            if len(shape) != len(spec.shape):
                raise InvalidInputError(
                    f"input '{spec.name}' has shape {list(shape)}, expected rank "
                    f"{len(spec.shape)} ({_describe(spec.shape)})")
            for axis, (dim, size) in enumerate(zip(self._dims(spec.shape), shape)):
                if isinstance(dim, int):
                    if size != dim:
                        raise InvalidInputError(
                            f"input '{spec.name}' has shape {list(shape)}, expected "
                            f"{_describe(spec.shape)} (dimension {axis} is fixed at {dim})")
                    continue
                name = _plain_symbol(dim)
                if name is None:
                    derived.append((spec.name, axis, dim, size))
                    continue
                if name in values and values[name] != size:
                    raise InvalidInputError(
                        f"input '{spec.name}' has {size} for dimension {axis} ('{name}'), "
                        f"but {where[name]} gives '{name}' = {values[name]}")
                values[name] = size
                where.setdefault(name, f"input '{spec.name}'")
        missing = [s for s in self.symbols if s not in values and s not in self.run_symbols]
        if missing:
            raise InvalidInputError(f"no input gives the size of {missing}")
        for name, axis, dim, size in derived:
            if dim.evaluate(values) != size:
                raise InvalidInputError(
                    f"input '{name}': dimension {axis} is {size}, expected {dim} = "
                    f"{dim.evaluate(values)}")
        return values

    def shape(self, spec, values: Mapping[str, int], room: bool = False) -> tuple[int, ...]:
        """A spec's shape for this run's symbol values, checked against the limits. A size
        that comes out negative is allocated as 0: such sizes break a guard of the model
        (a window larger than the input), which the entry checks first and reports.
        `room`: the run symbols are capacities, each dimension the room it needs for any
        value up to them (size_substitution.monotone_upper)."""
        dims = self._room(spec.shape) if room and self.run_symbols else self._dims(spec.shape)
        shape = tuple(d if isinstance(d, int) else max(0, d.evaluate(values)) for d in dims)
        check_tensor(shape, np.dtype(spec.dtype).itemsize, f"output '{spec.name}'")
        return shape

    def slot_offsets(self, values: Mapping[str, int]) -> tuple[list[int], int]:
        """Each dynamic-arena slot's byte offset and the arena's size for these symbol values:
        what the entry computes from its `dims` buffer (plan_memory.place_dynamic), here in
        Python ints."""
        offsets, total = [], 0
        for size in self._slots:  # type: ignore[attr-defined]
            offsets.append(total)
            size = size if isinstance(size, int) else max(0, size.evaluate(values))
            total += -(-size // _ALIGNMENT) * _ALIGNMENT
        return offsets, total

    def arena_bytes(self, values: Mapping[str, int]) -> int:
        """Bytes of the dynamic arena for this run (ResourceLimitError beyond the limit)."""
        total = self.slot_offsets(values)[1]
        check_allocation(total, "the dynamic arena of intermediate tensors")
        return total

    def cut(self, outputs: Sequence, results: Sequence[np.ndarray], dims: np.ndarray,
            counts: Mapping[str, int]) -> list[np.ndarray]:
        """The outputs of a run whose run symbols came out as `counts` (no more than their
        capacity): each written row-major at the start of its buffer, which was allocated
        for the capacities (`dims`), so each is that many leading elements in its shape."""
        values = dict(zip(self.symbols, dims.tolist()))
        values.update(counts)
        cut = []
        for spec, array in zip(outputs, results):
            if not any(d in counts for d in spec.shape if isinstance(d, str)) and not any(
                    isinstance(d, str) and set(self._dims((d,))[0].symbols()) & set(counts)
                    for d in spec.shape):
                cut.append(array)
                continue
            shape = self.shape(spec, values)
            cut.append(array.reshape(-1)[:int(np.prod(shape))].reshape(shape))
        return cut

    def dims(self, values: Mapping[str, int]) -> np.ndarray:
        return np.array([values[s] for s in self.symbols], np.int64)

    def plan(self, inputs: Sequence, outputs: Sequence, arrays: Sequence[np.ndarray],
             capacity: Mapping[str, int] | None = None, key: tuple | None = None
             ) -> RunPlan:
        """Everything a run with these input shapes needs, checked: computed once per
        distinct tuple of shapes (a decode loop meets each length once), then looked up.
        `capacity`: the rows to allocate for each run symbol's outputs; `key`: the
        tuple of the arrays' shapes, when the caller has it."""
        if key is None:
            key = tuple([a.shape for a in arrays])
        if self.run_symbols:
            rows = tuple((capacity or {}).get(s, INITIAL_CAPACITY) for s in self.run_symbols)
            key = (key, rows)
        plans = self.plans
        plan = plans.get(key)
        if plan is None:
            values = self.bind(inputs, arrays)
            for name, grown in zip(self.run_symbols, rows if self.run_symbols else ()):
                bound = self._bounds.get(name)  # type: ignore[attr-defined]
                values[name] = grown if bound is None else (
                    bound if isinstance(bound, int) else max(0, bound.evaluate(values)))
            empty = self.separable_batch is not None and values[self.separable_batch] == 0
            if empty:
                for spec in outputs:
                    if not any(isinstance(d, str) for d in spec.shape):
                        raise InvalidInputError(
                            f"a run with no samples: output '{spec.name}' does not have the "
                            f"batch dimension; give at least one sample")
            plan = RunPlan(self.dims(values),
                           [(self.shape(spec, values, room=True), np.dtype(spec.dtype))
                            for spec in outputs],
                           self.arena_bytes(values), empty)
            if len(plans) >= _PLAN_CACHE:
                plans.clear()
            plans[key] = plan
        return plan


@dataclass(frozen=True)
class RunPlan:
    """A run's symbol values (the entry's `dims` buffer), outputs, dynamic arena."""

    dims: np.ndarray
    allocations: list[tuple[tuple[int, ...], np.dtype]]
    """each output's shape and dtype"""
    dynamic_bytes: int
    empty: bool = False
    """no samples (`separable_batch` is 0): the outputs are empty, native code is not run"""


def _plain_symbol(d: Dim) -> str | None:
    if isinstance(d, SymDim) and len(d.terms) == 1:
        ((monomial, coefficient),) = d.terms.items()
        if coefficient == 1 and len(monomial) == 1:
            return monomial[0]
    return None


def _describe(shape: Sequence) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"
