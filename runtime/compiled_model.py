"""`CompiledModel`: the thin Python layer in front of one JIT-compiled native model.

It checks every input (names, dtypes, shapes, memory layout) before native code sees a
pointer, allocates the outputs, and calls `onnxc_entry(argv)` with one pointer array that
holds inputs, outputs, constants and the arena (see `onnxc.dialects.entry_abi`). Nothing here
computes model values: all inference happens in the compiled code.

Threads: ctypes releases the GIL for the native call, so runs from several threads really
execute at once. Each concurrent run needs its own arena (the intermediates) and argv, so a
model keeps a small pool of them: a run takes a free one or makes a new one, and gives it
back; the pool grows to the largest number of simultaneous callers and no further. Constants
are shared and read-only.

Inputs are accepted as C-contiguous arrays of the exact dtype and shape; a non-contiguous
view or a buffer not aligned for its dtype is copied first (never rejected), so any
ndarray of the right dtype and shape works. Wrong dtype, shape, count or names raise
InvalidInputError naming the input.

`run(..., out=[...])` writes into caller-owned output arrays (checked like inputs, and never
overlapping one), as onnxruntime's IOBinding does: no allocation and no page faults per run.

A model compiled for one sample of a symbolic batch (frontend/batch_axes.py) reports that
dimension as None in its specs and runs the native code once per sample, on consecutive
slices of every input and output. A model compiled with symbolic dimensions reports each as
its name (`"seq"`, or a polynomial such as `"past+seq"` for an output) and binds them per run
(runtime/symbolic_shapes.py).
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onnxc.dialects.check_failures import STATUS_RECORD_BYTES, check_failure
from onnxc.dialects.string_dtype import STRING_DTYPE
from onnxc.errors import InvalidArgumentError, InvalidInputError
from onnxc.resource_limits import check_allocation, check_tensor
from onnxc.runtime.profile import KernelProfile, kernel_profile
from onnxc.runtime.profile import reset as reset_profile
from onnxc.runtime.run_arguments import address_of, checked_input, checked_outputs
from onnxc.runtime.strings import is_hidden, run_with_strings

if TYPE_CHECKING:
    from onnxc.runtime.model_abi import ModelABI

_ARENA_ALIGNMENT = 64


@dataclass(frozen=True)
class TensorSpec:
    """Name, static shape and numpy dtype of one model input or output."""

    name: str
    shape: tuple[int | str | None, ...]
    """None: the symbolic batch dimension (any size); a string: a symbolic dimension"""
    dtype: np.dtype

    def __str__(self) -> str:
        dims = ["N" if d is None else d for d in self.shape]
        dtype = "string" if self.dtype == STRING_DTYPE else self.dtype
        return f"{self.name}: {dtype}{dims}"


class _CapacityExceeded(Exception):
    """A run stopped because size `symbol` came out `needed`, more than its buffers hold:
    the caller runs again with room (never seen outside CompiledModel). `measured`: other
    sizes the run found past their capacity before it stopped (a loop measures its own
    sizes over all its iterations, lowering/graph_to_loops/loop_sizes.py)."""

    def __init__(self, symbol: str, needed: int, measured: dict[str, int] | None = None):
        super().__init__(symbol, needed)
        self.symbol, self.needed = symbol, needed
        self.measured = measured or {}


def aligned_empty(nbytes: int, alignment: int = _ARENA_ALIGNMENT) -> np.ndarray:
    """A zeroed uint8 buffer whose first byte is `alignment`-aligned."""
    raw = np.zeros(nbytes + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start : start + nbytes]


@dataclass
class _Slot:
    """What one in-flight run owns: its arena and the argv that points at it."""

    arena: np.ndarray
    argv: ctypes.Array
    argv_address: int
    dims: np.ndarray | None = None
    """a symbolic model's symbol values for the run (the entry's `dims` buffer)"""
    dynamic: np.ndarray | None = None
    """its dynamic arena, grown to the largest run so far"""
    bound: np.ndarray | None = None
    """the symbol values `dims` holds (a run plan's array)"""


class CompiledModel:
    """A model compiled to native code; call `run` like an onnxruntime InferenceSession."""

    def __init__(self, native, entry_address: int, abi: ModelABI,
                 constants: Sequence[np.ndarray],
                 input_defaults: Mapping[str, np.ndarray] | None = None):
        """`abi`: what the native entry at `entry_address` takes (runtime/model_abi.py);
        `constants`: its weights, in the ABI's order; `native` keeps the code alive."""
        self.abi = abi
        """the record it was built from (a cache entry and an artifact store it; threads,
        precision and target are reported from it)"""
        self._native = native  # keeps the JIT engine (and so the code) alive
        self.symbolic = abi.symbolic
        """the size symbols and dynamic arena of a model with symbolic dimensions"""
        self._capacity: dict[str, int] = {}
        """rows allocated for outputs of run-time length, per run symbol: the most a run
        needed so far (symbolic_shapes.INITIAL_CAPACITY until one needed more)"""
        self.check_sites = [dict(site) for site in abi.check_sites]
        """One description per run-time check (dialects/check_failures.py reads them)."""
        self.status_offset = abi.status_offset
        """Byte offset of the check status record in the arena (-1: no checks)."""
        self.input_defaults = {name: np.ascontiguousarray(value)
                               for name, value in (input_defaults or {}).items()}
        """Values of the inputs a run may leave out: graph inputs that also have an
        initializer (IR version >= 4), which onnxruntime calls overridable initializers."""
        self._entry_inputs = list(abi.inputs)
        """every input of the native entry, in its order (the overridable ones included)"""
        self._split_inputs()
        self._entry_outputs = list(abi.outputs)
        """every output of the native entry, in its order (the hidden ones included)"""
        self._split_outputs()
        self.arena_bytes = abi.arena_bytes
        self.intermediate_bytes = abi.intermediate_bytes
        self._constants = [np.ascontiguousarray(c) for c in constants]
        self._entry = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(entry_address)
        self._check_allocations()
        # Free (argv, arena) slots, one per concurrent run; list.pop/append are atomic.
        self._slot_lock = threading.Lock()  # guards _slot_count only
        self._slot_count = 0
        self._slots: list[_Slot] = []  # every slot made, for profile()
        self._free_slots: list[_Slot] = [self._new_slot()]
        self._output_index = {o.name: i for i, o in enumerate(self._entry_outputs)
                              if not is_hidden(o.name)}
        # Per-run work done once: what run() compares each input against, what it allocates.
        self._input_names = [i.name for i in self._entry_inputs]
        self._input_name_set = frozenset(self._input_names)
        self._input_checks = [(i, i.shape, np.dtype(i.dtype)) for i in self._entry_inputs]
        self._output_allocs = [(o.shape, np.dtype(o.dtype)) for o in self._entry_outputs]
        self._all_outputs = [i for i, o in enumerate(self._entry_outputs)
                             if not is_hidden(o.name)]
        """the outputs a run gives: every entry output but the hidden string bytes"""
        self.compile_seconds: dict[str, float] = {}  # per stage, filled by onnxc.compile
        self.from_cache = False
        """True when onnxc.compile loaded this model from its disk cache (a hit)."""
        if abi.batch_rows is not None:
            self._bind_batch_rows(*abi.batch_rows)
        self._string_io = (
            [i for i, s in enumerate(self._entry_inputs) if s.dtype == STRING_DTYPE],
            [i for i, s in enumerate(self._entry_outputs) if s.dtype == STRING_DTYPE],
            [i for i, s in enumerate(self._entry_outputs) if is_hidden(s.name)])
        """which inputs and outputs are strings, which outputs hold the bytes of strings a
        run made (runtime/strings.py); () when none is"""
        if not any(self._string_io):
            self._string_io = ()
        self._input_shapes = [tuple(i.shape) for i in self._entry_inputs]
        self._input_dtypes = [dtype for _, _, dtype in self._input_checks]
        self._no_hidden = len(self._all_outputs) == len(self._entry_outputs)
        self._plain = (not self._string_io and self._batch_rows is None
                       and (self.symbolic is None or not self.symbolic.run_symbols))
        """whether `_run_plain` may run this model"""

    def _check_allocations(self) -> None:
        """ResourceLimitError, before the first arena is made, for an arena or an output
        that cannot be allocated (onnxc.resource_limits: the import refused larger tensors,
        but a model loaded from the cache may meet less free memory than it was compiled
        with)."""
        check_allocation(self.arena_bytes, "the arena of intermediate tensors")
        for spec in self._entry_outputs:
            if all(isinstance(d, int) for d in spec.shape):
                check_tensor(spec.shape, np.dtype(spec.dtype).itemsize,
                             f"output '{spec.name}'")

    def _split_outputs(self) -> None:
        """`outputs`: the model's outputs, without the entry's hidden ones (the bytes string
        outputs point into: runtime/strings.py)."""
        self.outputs = [s for s in self._entry_outputs if not is_hidden(s.name)]

    def _split_inputs(self) -> None:
        """`inputs`: what a run needs; `overridable_inputs`: what it may give instead of
        the defaults (onnxruntime's get_inputs / get_overridable_initializers)."""
        self.inputs = [s for s in self._entry_inputs if s.name not in self.input_defaults]
        self.overridable_inputs = [s for s in self._entry_inputs
                                   if s.name in self.input_defaults]

    _batch_rows: tuple[list[int], list[int]] | None = None
    """rows per sample of each input and output, when compiled for one sample of a batch"""

    def _bind_batch_rows(self, rows_in: Sequence[int], rows_out: Sequence[int]) -> None:
        """Mark the model as compiled for one sample of a batch, from the rows per sample
        of each input and output (0: not batched; the ABI's `batch_rows`): its batched
        inputs and outputs then take any multiple of their per-sample rows."""
        rows_in, rows_out = list(rows_in), list(rows_out)
        self._batch_rows = (rows_in, rows_out)
        self._sample_inputs = list(self._entry_inputs)
        self._sample_outputs = list(self._entry_outputs)
        # bytes of one sample's block in each input and output (0: not batched)
        self._sample_bytes = [
            math.prod(spec.shape) * np.dtype(spec.dtype).itemsize if k else 0
            for spec, k in zip([*self._entry_inputs, *self._entry_outputs],
                               [*rows_in, *rows_out])]
        self._entry_inputs = [TensorSpec(s.name, (None, *s.shape[1:]), s.dtype) if k else s
                              for s, k in zip(self._entry_inputs, rows_in)]
        self._split_inputs()
        self._entry_outputs = [TensorSpec(s.name, (None, *s.shape[1:]), s.dtype) if k else s
                               for s, k in zip(self._entry_outputs, rows_out)]
        self._split_outputs()

    @property
    def num_threads(self) -> int:
        """Threads the model's parallel loops run on (fixed when it was compiled)."""
        return self.abi.num_threads

    @property
    def precision(self) -> str:
        """What GEMMs and convs compute in: "fp32", or "bf16" (fixed when compiled)."""
        return self.abi.precision

    @property
    def target(self) -> str:
        """The name of the target it was compiled for ("host", a preset, or a spec)."""
        return self.abi.target.name

    @property
    def input_names(self) -> list[str]:
        """The inputs a run needs (without the overridable ones)."""
        return [s.name for s in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.outputs]

    def run(
        self, output_names: Sequence[str] | None, feeds: Mapping[str, np.ndarray],
        *, out: Sequence[np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Run the model on `feeds` (name -> array); return the requested outputs in order.

        `out`: one preallocated array per model output (all of them, in model order), which
        the run writes into instead of allocating."""
        if (output_names is None and out is None and self._plain and type(feeds) is dict
                and len(feeds) == len(self._input_names)):
            # as many names as inputs, each found (else a None value): the same names
            results = self._run_plain(list(map(feeds.get, self._input_names)))
            if results is not None:
                return results
        wanted = self._all_outputs if output_names is None else self._resolve_outputs(output_names)
        if type(feeds) is not dict and not isinstance(feeds, Mapping):
            raise InvalidInputError(
                f"feeds must be a mapping of input name to array, got {type(feeds).__name__}"
            )
        if feeds.keys() != self._input_name_set:
            self._check_names(feeds)
            defaults = self.input_defaults
            values = [feeds[name] if name in feeds else defaults[name]
                      for name in self._input_names]
        else:
            values = [feeds[name] for name in self._input_names]
        return self._invoke(values, wanted, out)

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """Positional form of `run(None, ...)`: one array per input, in model order (the
        overridable inputs left out, or all of them given)."""
        if self._plain and len(arrays) == len(self._input_names):
            results = self._run_plain(arrays)
            if results is not None:
                return results
        if len(arrays) == len(self.inputs) and self.input_defaults:
            given = iter(arrays)
            arrays = tuple(self.input_defaults[s.name] if s.name in self.input_defaults
                           else next(given) for s in self._entry_inputs)
        elif len(arrays) != len(self._entry_inputs):
            raise InvalidInputError(
                f"expected {len(self.inputs)} input(s) {self.input_names}, got {len(arrays)}"
            )
        return self._invoke(arrays, self._all_outputs)

    def _run_plain(self, values: Sequence) -> list[np.ndarray] | None:
        """`run(None, feeds)` / `model(*arrays)` in one frame for the common case: every
        input (`values`, in entry order) an aligned, contiguous array of its dtype whose
        shapes the model ran before, no strings, no batch rows, no outputs of run-time
        length. None (nothing run) for anything else, which the general path then checks
        and runs. Why: at batch 1 a small model's run is mostly this Python (a 500-tree
        forest: 3.4 against 4.8 us of 0.45 us native)."""
        shapes, addresses = [], []
        for dtype, value in zip(self._input_dtypes, values):
            if type(value) is not np.ndarray or (value.dtype is not dtype
                                                  and value.dtype != dtype):
                return None
            try:  # the buffer protocol refuses a strided view: contiguity is checked here
                address = ctypes.addressof(ctypes.c_char.from_buffer(value))
            except (TypeError, ValueError, BufferError):  # strided, read-only, empty
                return None
            if address % dtype.alignment:
                return None
            shapes.append(value.shape)
            addresses.append(address)
        signature = self.symbolic
        if signature is None:
            if shapes != self._input_shapes:
                return None
            allocations, plan = self._output_allocs, None
        else:
            plan = signature.plans.get(tuple(shapes))  # a plan exists for checked shapes only
            if plan is None:
                return None
            allocations = plan.allocations
        results = [np.empty(shape, dtype) for shape, dtype in allocations]
        try:
            for result in results:
                addresses.append(ctypes.addressof(ctypes.c_char.from_buffer(result)))
        except (TypeError, ValueError, BufferError):  # an empty output
            return None
        try:
            slot = self._free_slots.pop()
        except IndexError:
            slot = self._new_slot()
        try:
            if plan is not None and (slot.bound is not plan.dims or slot.dynamic is None
                                     or slot.dynamic.nbytes < plan.dynamic_bytes):
                self._bind_sizes(slot, plan.dims, plan.dynamic_bytes)
            slot.argv[:len(addresses)] = addresses
            status = self._entry(slot.argv_address)  # ctypes drops the GIL for the call
            if status:
                raise self._failed_check(slot, status, None)
        finally:
            self._free_slots.append(slot)
        return results if self._no_hidden else [results[i] for i in self._all_outputs]

    def _check_names(self, feeds: Mapping[str, np.ndarray]) -> None:
        unknown = sorted(set(feeds) - self._input_name_set)
        if unknown:
            raise InvalidInputError(
                f"unknown input name(s) {unknown}; the model takes {self.input_names}"
                + (f" (and may take {sorted(self.input_defaults)})"
                   if self.input_defaults else "")
            )
        for spec in self.inputs:
            if spec.name not in feeds:
                raise InvalidInputError(f"missing input '{spec.name}' (expected {spec})")

    def _invoke(self, values: Sequence, wanted: list[int],
                out: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Check `values` (one per input, in order), call the native entry, return outputs."""
        if self._string_io:  # strings in or out: runtime/strings.py converts them
            return run_with_strings(self, values, wanted, out)
        return self._invoke_arrays(values, wanted, out)

    def _invoke_arrays(self, values: Sequence, wanted: list[int],
                       out: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """`_invoke` once strings are pairs."""
        if self._batch_rows is not None:
            return self._invoke_batched(values, wanted, out)
        if self.symbolic is not None:
            return self._invoke_symbolic(values, wanted, out)
        arrays, addresses = self._input_addresses(values)
        if out is None:
            results = [np.empty(shape, dtype) for shape, dtype in self._output_allocs]
            addresses.extend(map(address_of, results))
        else:
            addresses.extend(checked_outputs(out, self._output_allocs, arrays,
                                                   addresses))
            results = list(out)
        self._call_native((addresses,))
        return [results[i] for i in wanted]

    def _input_addresses(self, values: Sequence, shapes: list | None = None
                         ) -> tuple[list[np.ndarray], list[int]]:
        """The inputs native code may read (checked, or copied when not contiguous or not
        aligned) and their addresses. `shapes`: a symbolic model's run collects the input
        shapes there instead (its run plan's key; the plan checks them against the specs):
        reading `.shape` once per input is a tenth of a decode step's Python time."""
        arrays, addresses = [], []
        symbolic = shapes is not None
        for (spec, shape, dtype), value in zip(self._input_checks, values):
            if (type(value) is not np.ndarray or value.dtype != dtype
                    or not value.flags.c_contiguous):
                value = checked_input(spec, value, symbolic=symbolic)
            if symbolic:
                shapes.append(value.shape)  # type: ignore[union-attr]
            elif value.shape != shape:
                checked_input(spec, value)  # raises, naming the input and both shapes
            address = address_of(value)
            if address % dtype.alignment:  # a view at an odd offset: copy to aligned memory
                value = value.copy()
                address = address_of(value)
            arrays.append(value)
            addresses.append(address)
        return arrays, addresses

    def _invoke_symbolic(self, values: Sequence, wanted: list[int],
                         out: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        """Bind the size symbols from the inputs, then one native run with their values."""
        signature = self.symbolic
        assert signature is not None
        shapes: list[tuple[int, ...]] = []
        arrays, addresses = self._input_addresses(values, shapes)
        if signature.run_symbols:
            return self._invoke_run_length(arrays, addresses, wanted, out)
        plan = signature.plans.get(key := tuple(shapes)) or signature.plan(
            self._entry_inputs, self._entry_outputs, arrays, key=key)
        if out is None:
            results = [np.empty(shape, dtype) for shape, dtype in plan.allocations]
            addresses.extend(map(address_of, results))
        else:
            addresses.extend(checked_outputs(out, plan.allocations, arrays,
                                                   addresses))
            results = list(out)
        if not plan.empty:
            self._call_native((addresses,), sizes=(plan.dims, plan.dynamic_bytes))
        return [results[i] for i in wanted]

    def _invoke_run_length(self, arrays: list[np.ndarray], addresses: list[int],
                           wanted: list[int], out: Sequence[np.ndarray] | None
                           ) -> list[np.ndarray]:
        """A run of a model with outputs of run-time length (runtime/symbolic_shapes.py):
        outputs allocated with the capacity so far, cut to the counts the run wrote back, or
        the run repeated with room for them when a count outgrew its capacity."""
        signature = self.symbolic
        assert signature is not None
        if out is not None:
            raise InvalidArgumentError(
                f"out= cannot be used: outputs of this model have a length known only once "
                f"it ran ({', '.join(signature.run_symbols)})")
        capacity = dict(self._capacity)  # kept once a run succeeds with it
        while True:
            plan = signature.plan(self._entry_inputs, self._entry_outputs, arrays, capacity)
            results = [np.empty(shape, dtype) for shape, dtype in plan.allocations]
            try:
                counts = self._call_native(([*addresses, *map(address_of, results)],),
                                           sizes=(plan.dims, plan.dynamic_bytes), counts=True)
            except _CapacityExceeded as short:  # stopped where a size outgrew its room
                if signature.run_bounds[signature.run_symbols.index(short.symbol)]:
                    raise InvalidInputError(f"size '{short.symbol}' came out {short.needed}, "
                                            f"past its bound") from None
                capacity[short.symbol] = max(short.needed, 2 * capacity.get(short.symbol, 0))
                for name, size in short.measured.items():
                    if not signature.run_bounds[signature.run_symbols.index(name)]:
                        capacity[name] = max(size, 2 * capacity.get(name, 0))
                continue
            self._capacity = capacity
            results = signature.cut(self._entry_outputs, results, plan.dims, counts)
            return [results[i] for i in wanted]

    def _call_native(self, runs: Iterable[Sequence[int]], batched: bool = False,
                     sizes: tuple[np.ndarray, int] | None = None,
                     counts: bool = False) -> dict[str, int]:
        """Call the native entry once per address list (inputs then outputs) on one arena;
        InvalidInputError (nothing returned) when a run-time check refused the data.
        `sizes`: a symbolic model's symbol values and dynamic arena bytes for the run.
        `counts`: return the counts of the loops whose outputs have run-time length."""
        try:
            slot = self._free_slots.pop()
        except IndexError:  # every arena is in use by another thread: make one more
            slot = self._new_slot()
        try:
            argv = slot.argv
            if sizes is not None:
                self._bind_sizes(slot, *sizes)
            for sample, addresses in enumerate(runs):
                for i, address in enumerate(addresses):
                    argv[i] = address
                status = self._entry(slot.argv_address)  # ctypes drops the GIL for the call
                if status:
                    raise self._failed_check(slot, status, sample if batched else None)
            return self._run_counts(slot) if counts else {}
        finally:
            if counts:  # the entry wrote counts over the capacities in `dims`, also when a
                slot.bound = None  # check stopped it: the next run binds them again
            self._free_slots.append(slot)

    def _run_counts(self, slot: _Slot) -> dict[str, int]:
        """The counts the entry wrote over the capacities in `slot.dims`."""
        run = () if self.symbolic is None else self.symbolic.run_symbols
        if not run:
            return {}
        assert slot.dims is not None
        first = len(self.symbolic.symbols) - len(run)  # type: ignore[union-attr]
        return dict(zip(run, slot.dims[first:first + len(run)].tolist()))

    def _outgrown(self, slot: _Slot) -> dict[str, int]:
        """The run symbols whose `dims` entry a stopped run left past the capacity it was
        given: sizes it measured beyond their room."""
        if self.symbolic is None or slot.dims is None or slot.bound is None:
            return {}
        first = len(self.symbolic.symbols) - len(self.symbolic.run_symbols)
        given = slot.bound[first:]
        found = slot.dims[first:first + len(given)]
        return {name: int(v) for name, v, c in zip(self.symbolic.run_symbols, found, given)
                if v > c}

    def _failed_check(self, slot: _Slot, status: int, sample: int | None) -> Exception:
        """The error for a run the native code stopped: check `status - 1` refused data, or
        (a "capacity" site) a size the run defines needs more room than it had."""
        site = status - 1
        if not 0 <= site < len(self.check_sites) or self.status_offset < 0:
            return InvalidInputError(f"the compiled model stopped with status {status}")
        record = slot.arena[self.status_offset:self.status_offset + STATUS_RECORD_BYTES]
        record = record.view(np.int64)
        if self.check_sites[site].get("kind") == "capacity":
            return _CapacityExceeded(str(self.check_sites[site]["operand"]), int(record[2]),
                                     self._outgrown(slot))
        sizes = None  # a symbolic model's symbol values this run: a symbolic range's numbers
        if self.symbolic is not None and slot.dims is not None:
            sizes = {s: int(v) for s, v in zip(self.symbolic.symbols, slot.dims)}
        return check_failure(self.check_sites[site], int(record[1]), int(record[2]), sample,
                             sizes)

    def _invoke_batched(self, values: Sequence, wanted: list[int],
                        out: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        """One native run per sample, on consecutive row blocks of each batched array."""
        assert self._batch_rows is not None
        rows_in, rows_out = self._batch_rows
        samples = None
        arrays = []
        for spec, sample, k, value in zip(self._entry_inputs, self._sample_inputs, rows_in,
                                          values):
            if not k:
                arrays.append(checked_input(sample, value))
                continue
            value = checked_input(spec, value, batch_rows=k)
            n = value.shape[0] // k
            if samples is not None and n != samples:
                raise InvalidInputError(
                    f"input '{spec.name}' holds {n} sample(s), other inputs {samples}")
            samples = n
            arrays.append(value)
        assert samples is not None
        shapes = [((k * samples, *shape[1:]) if k else shape, dtype)
                  for (shape, dtype), k in zip(self._output_allocs, rows_out)]
        bases = [address_of(a) for a in arrays]
        if out is None:
            results = [np.empty(shape, dtype) for shape, dtype in shapes]
            bases.extend(map(address_of, results))
        else:
            bases.extend(checked_outputs(out, shapes, arrays, bases))
            results = list(out)
        steps = self._sample_bytes
        self._call_native(([base + i * step for base, step in zip(bases, steps)]
                           for i in range(samples)), batched=True)
        return [results[i] for i in wanted]

    def _new_slot(self) -> _Slot:
        """An argv (constants and arena filled in) with its own zeroed, aligned arena.

        A symbolic model's argv also has its `dims` buffer after the outputs and its dynamic
        arena last (dialects/entry_abi.py); `_bind_sizes` fills them per run."""
        n_io = len(self._entry_inputs) + len(self._entry_outputs)
        symbolic = self.symbolic is not None
        arena = aligned_empty(self.arena_bytes)
        argv = (ctypes.c_void_p * (n_io + symbolic + len(self._constants) + 1 + symbolic))()
        first_constant = n_io + symbolic
        for i, c in enumerate(self._constants):
            argv[first_constant + i] = c.ctypes.data
        argv[first_constant + len(self._constants)] = arena.ctypes.data
        slot = _Slot(arena, argv, ctypes.addressof(argv))
        with self._slot_lock:
            self._slot_count += 1
            self._slots.append(slot)
        if symbolic:
            assert self.symbolic is not None
            slot.dims = np.zeros(max(1, len(self.symbolic.symbols)), np.int64)
            argv[n_io] = slot.dims.ctypes.data
        return slot

    def _bind_sizes(self, slot: _Slot, dims: np.ndarray, dynamic_bytes: int) -> None:
        """Give `slot` this run's symbol values and a dynamic arena of at least
        `dynamic_bytes` (kept for later runs: it only grows)."""
        assert slot.dims is not None
        if slot.bound is not dims:  # the same plan's run after run: nothing to copy
            slot.dims[: len(dims)] = dims
            slot.bound = dims
        if slot.dynamic is None or slot.dynamic.nbytes < dynamic_bytes:
            slot.dynamic = aligned_empty(max(dynamic_bytes, _ARENA_ALIGNMENT))
            slot.argv[len(slot.argv) - 1] = slot.dynamic.ctypes.data

    def profile(self) -> KernelProfile:
        """Time per kernel call of the runs since compile or `reset_profile`, for a model
        compiled with `profile=True` (runtime/profile.py; InvalidArgumentError otherwise)."""
        return kernel_profile(self.abi, [slot.arena for slot in self._slots])

    def reset_profile(self) -> None:
        """Zero the profile's counters (not while a run is in flight)."""
        reset_profile(self.abi, [slot.arena for slot in self._slots])

    @property
    def arena_count(self) -> int:
        """How many arenas this model has made: the most runs that were ever in flight."""
        return self._slot_count

    def _resolve_outputs(self, output_names: Sequence[str] | None) -> list[int]:
        if output_names is None:
            return list(self._all_outputs)
        try:
            return [self._output_index[n] for n in output_names]
        except KeyError as err:
            raise InvalidInputError(
                f"unknown output name {err.args[0]!r}; the model has {self.output_names}"
            ) from None
