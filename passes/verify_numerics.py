"""Numeric equivalence of graph rewrites: evaluate before and after passes on random inputs.

`check_pass_equivalence` is the harness every pass test uses; `bisect_pipeline` (behind
`onnxc-opt --verify-numerics` and `onnxc.compile(..., verify_numerics=True)`) runs a pipeline
one pass at a time and names the first pass whose outputs drift, with the ops it changed.

Tolerance is relative to each output's scale: an output passes when
`max|after - before| <= atol + rtol * max|before|`. Fusions reorder float arithmetic (a folded
BatchNorm rounds differently from the unfused one), so an element near zero may differ by
more than `rtol` of itself while the output as a whole is equal to rounding. NaNs must sit at
the same positions, and shapes and element types must match exactly.

Evaluations are memoised by structural value numbering (op name, properties, result types and
operand numbers): graph ops are pure, so an op that a pass left untouched, or rebuilt
identically, is not recomputed. That makes re-evaluating a whole network after each of ~60
passes cost little more than evaluating the ops the passes changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.dialects.graph_fused_elementwise import FusedElementwiseOp, body_key
from onnxc.dialects.symbolic_dims import evaluate_shape, is_static, symbols_of
from onnxc.errors import InvalidInputError, OnnxcError
from onnxc.passes.evaluator import (
    dtype_of,
    entry_function,
    evaluate_op,
    evaluate_region_op,
)
from onnxc.passes.evaluator_sizes import bind_symbols, has_symbolic_types, specialized


class NumericDriftError(OnnxcError):
    """A pass of the pipeline changed the graph's results beyond tolerance."""

    def __init__(self, report: BisectReport):
        self.report = report
        step = report.first_drifting
        super().__init__(f"pass '{step.name}' changed the results: {'; '.join(step.problems)}")


SYMBOL_SIZE = 5
"""The size random inputs give a symbolic dimension's symbols (`seq`) unless told otherwise:
not 1 (which broadcasting would hide) and not a power of two."""


def random_inputs(
    module_or_func: ModuleOp | FuncOp, *, seed: int = 0, distribution: str = "uniform",
    symbols: Mapping[str, int] | None = None,
) -> list[np.ndarray]:
    """Seeded inputs for the entry function: floats uniform in [-1, 1) (or standard normal),
    integers in [0, 3) so that they are valid indices and shift amounts, booleans at random.
    A symbolic dimension has the size `symbols` gives its symbols (SYMBOL_SIZE by default)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for arg in entry_function(module_or_func).body.block.args:
        shape, dtype = shape_of(arg), dtype_of(arg)
        if not is_static(shape):
            values = {s: (symbols or {}).get(s, SYMBOL_SIZE) for s in symbols_of(shape)}
            shape = evaluate_shape(shape, values)
        if dtype.kind == "f":
            if distribution == "normal":
                values = rng.standard_normal(shape)
            elif distribution == "uniform":
                values = rng.uniform(-1.0, 1.0, shape)
            else:
                raise InvalidInputError(f"unknown distribution '{distribution}'")
        elif dtype.kind == "b":
            values = rng.integers(0, 2, shape)
        else:
            values = rng.integers(0, 3, shape)
        arrays.append(np.asarray(values).astype(dtype))
    return arrays


def regions_key(op: Operation) -> Hashable:
    """What an op's regions add to its memo key: a fused op's body by structure (body_key);
    an op with other regions (graph.if, graph.loop bodies, which read outer values) equals no
    other op."""
    if isinstance(op, FusedElementwiseOp):
        return body_key(op)
    return object() if op.regions else ()


class MemoEvaluator:
    """Evaluates entry functions, reusing results of ops already computed on equal operands.

    Only the values of the latest evaluation are kept, so memory stays bounded by about two
    evaluations of the network."""

    def __init__(self, inputs: Sequence[np.ndarray]):
        self.inputs = [np.asarray(a) for a in inputs]
        self._cache: dict[Hashable, list[tuple[np.ndarray, Hashable]]] = {}
        self._numbers: dict[tuple, int] = {}  # structural key -> value number
        self.computed = 0

    def number(self, op: Operation, operand_numbers: tuple) -> int:
        """The value number of `op`: equal for ops with equal name, properties, result types,
        regions (regions_key) and operand numbers (interned: flat keys however deep the graph)."""
        props = tuple(sorted(op.properties.items()))
        types = tuple(r.type for r in op.results)
        key = (op.name, props, types, regions_key(op), operand_numbers)
        return self._numbers.setdefault(key, len(self._numbers))

    def numbers(self, module_or_func: ModuleOp | FuncOp) -> dict[Operation, int]:
        """The value number of every op in the entry function."""
        func = entry_function(module_or_func)
        vnums: dict[SSAValue, Hashable] = {a: ("arg", i) for i, a in enumerate(func.args)}
        op_nums: dict[Operation, int] = {}
        for op in func.body.block.ops:
            if isinstance(op, ReturnOp):
                break
            num = self.number(op, tuple(vnums[v] for v in op.operands))
            op_nums[op] = num
            for i, r in enumerate(op.results):
                vnums[r] = (num, i)
        return op_nums

    @staticmethod
    def content_key(array: np.ndarray) -> tuple:
        return (array.dtype.str, array.shape, hash(np.ascontiguousarray(array).tobytes()))

    def run(self, module_or_func: ModuleOp | FuncOp) -> list[np.ndarray]:
        """The entry function's outputs; an op is recomputed only when its form or the
        contents of its operands are new (keys hash values, so an exact rewrite upstream,
        e.g. a dropped Identity, does not force recomputing everything below it)."""
        func = entry_function(module_or_func)
        if len(func.args) != len(self.inputs):
            raise InvalidInputError(f"expected {len(func.args)} inputs, got {len(self.inputs)}")
        if has_symbolic_types(func):  # run it at the sizes the inputs give the symbols
            func = specialized(func, bind_symbols(func, self.inputs))
        env: dict[SSAValue, tuple[np.ndarray, Hashable]] = {}
        for arg, value in zip(func.args, self.inputs):
            value = value.astype(dtype_of(arg), copy=False)
            env[arg] = (value, self.content_key(value))
        cache: dict[Hashable, list[tuple[np.ndarray, Hashable]]] = {}
        for op in func.body.block.ops:
            if isinstance(op, ReturnOp):
                self._cache = cache
                return [env[v][0] for v in op.operands]
            if isinstance(op, graph.IfOp | graph.LoopOp):  # regions read outer values too
                values = evaluate_region_op(op, [env[v][0] for v in op.operands],
                                            {v: pair[0] for v, pair in env.items()})
                self.computed += 1
                for r, v in zip(op.results, values):
                    env[r] = (v, self.content_key(v))
                continue
            key = (op.name, tuple(sorted(op.properties.items())), tuple(r.type for r in op.results),
                   regions_key(op), tuple(env[v][1] for v in op.operands))
            entry = self._cache.get(key) or cache.get(key)
            if entry is None:
                values = evaluate_op(op, [env[v][0] for v in op.operands])
                self.computed += 1
                if not op.operands:  # constants: the properties are the contents
                    entry = [(v, ("const", key, i)) for i, v in enumerate(values)]
                else:
                    entry = [(v, self.content_key(v)) for v in values]
            cache[key] = entry
            for r, pair in zip(op.results, entry):
                env[r] = pair
        raise InvalidInputError(f"function @{func.sym_name.data} has no func.return")


def output_drift(before: np.ndarray, after: np.ndarray) -> float:
    """max|after - before| / max|before| (inf on a shape, type or NaN-position mismatch)."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return float("inf")
    if before.dtype.kind not in "fc":
        return 0.0 if np.array_equal(before, after) else float("inf")
    nan_b, nan_a = np.isnan(before), np.isnan(after)
    if not np.array_equal(nan_b, nan_a):
        return float("inf")
    b, a = before[~nan_b].astype(np.float64), after[~nan_a].astype(np.float64)
    if b.size == 0:
        return 0.0
    finite = np.isfinite(b)
    if not np.array_equal(b[~finite], a[~finite]):
        return float("inf")
    diff = float(np.max(np.abs(a[finite] - b[finite]), initial=0.0))
    scale = float(np.max(np.abs(b[finite]), initial=0.0))
    return diff if scale == 0.0 else diff / scale


def output_labels(module_or_func: ModuleOp | FuncOp) -> list[str]:
    """'output 0 (prob)', ...: indices with the ONNX output names when the importer kept them."""
    func = entry_function(module_or_func)
    count = len(func.function_type.outputs.data)
    names = func.attributes.get("onnxc.output_names")
    if isinstance(names, ArrayAttr) and len(names.data) == count:
        return [f"output {i} ({n.data})" for i, n in enumerate(names.data)]
    return [f"output {i}" for i in range(count)]


def drifting_outputs(
    before: Sequence[np.ndarray], after: Sequence[np.ndarray], rtol: float, atol: float,
    labels: Sequence[str] | None = None,
) -> list[tuple[int, str]]:
    """(index, description) of every output outside `atol + rtol * max|before|`."""
    if len(before) != len(after):
        return [(-1, f"{len(before)} outputs before, {len(after)} after")]
    bad = []
    for i, (b, a) in enumerate(zip(before, after)):
        label = labels[i] if labels is not None and i < len(labels) else f"output {i}"
        if b.shape != a.shape or b.dtype != a.dtype:
            bad.append((i, f"{label}: {b.dtype}{list(b.shape)} became {a.dtype}{list(a.shape)}"))
            continue
        resolution = _float_resolution(b.dtype)
        if resolution is None:
            if not np.array_equal(a, b):
                bad.append((i, f"{label}: {int(np.sum(a != b))} elements differ"))
            continue
        # a half-precision output cannot agree closer than its own rounding (2 ulps)
        output_rtol = max(rtol, 2 * resolution)
        nan_ok = np.array_equal(np.isnan(a), np.isnan(b))
        with np.errstate(invalid="ignore"):
            diff = np.where(np.isnan(b), 0.0, np.abs(a.astype(np.float64) - b))
            scale = float(np.max(np.where(np.isfinite(b), np.abs(b), 0.0), initial=0.0))
        worst = float(np.nanmax(diff, initial=0.0))
        if not nan_ok or not worst <= atol + output_rtol * scale:
            bad.append((i, (f"{label}: max abs diff {worst:.3g} (scale {scale:.3g}, allowed "
                           f"{atol + output_rtol * scale:.3g}){'' if nan_ok else ', NaNs moved'}")))
    return bad


def _float_resolution(dtype: np.dtype) -> float | None:
    """The unit roundoff of a float dtype (numpy's, or ml_dtypes' bfloat16, which computes),
    else None (integers, bools and the storage-only 8-bit floats must match exactly)."""
    if dtype.kind in "fc":
        return float(np.finfo(dtype).eps) / 2
    if dtype == np.dtype(ml_dtypes.bfloat16):
        return float(ml_dtypes.finfo(dtype).eps) / 2
    return None


Pipeline = str | Sequence["str | ModulePass"]


def _apply(module: ModuleOp, pass_pipeline: Pipeline) -> None:
    """Run pipeline text, registry specs or ModulePass instances on `module`, then verify."""
    from onnxc.pass_manager import make_context, run_passes

    ctx = make_context()
    items = [pass_pipeline] if isinstance(pass_pipeline, str | ModulePass) else pass_pipeline
    for item in items:
        if isinstance(item, ModulePass):
            item.apply(ctx, module)
            module.verify()
        else:
            run_passes(ctx, module, item)


def check_pass_equivalence(
    module: ModuleOp,
    pass_pipeline: Pipeline,
    *,
    seed: int = 0,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    distribution: str = "uniform",
) -> ModuleOp:
    """Run `pass_pipeline` on a copy of `module`; raise AssertionError naming the outputs that
    drift on seeded random inputs. Returns the rewritten copy (for further checks)."""
    after = module.clone()
    inputs = random_inputs(module, seed=seed, distribution=distribution)
    evaluator = MemoEvaluator(inputs)
    expected = evaluator.run(module)
    _apply(after, pass_pipeline)
    actual = evaluator.run(after)
    bad = drifting_outputs(expected, actual, rtol, atol, output_labels(module))
    if bad:
        raise AssertionError(
            f"'{pass_pipeline}' changed the results: " + "; ".join(text for _, text in bad)
        )
    return after


# ----------------------------------------------------------------------------- bisection


@dataclass
class PassStep:
    """One pass of a bisected pipeline: what it did to the graph and to the outputs."""

    name: str
    drift: float
    removed: Counter[str] = field(default_factory=Counter)
    added: Counter[str] = field(default_factory=Counter)
    new_ops: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class BisectReport:
    """Per-pass drift of a pipeline and the first pass that went beyond tolerance."""

    steps: list[PassStep]
    first_drifting: PassStep | None
    rtol: float
    atol: float

    @property
    def ok(self) -> bool:
        return self.first_drifting is None

    def __str__(self) -> str:
        lines = [(f"verify-numerics: {len(self.steps)} passes, rtol={self.rtol:g} "
                 f"atol={self.atol:g} (relative to each output's max |value|)")]
        step = self.first_drifting
        if step is None:
            worst = max((s.drift for s in self.steps), default=0.0)
            lines.append(f"  no pass drifts (largest relative drift {worst:.3g})")
            return "\n".join(lines)
        lines.append(f"  first drifting pass: {step.name} (relative drift {step.drift:.3g})")
        lines += [f"    {p}" for p in step.problems]
        if step.removed:
            lines.append("    removed: " + ", ".join(f"{n} x{c}" for n, c in
                                                     sorted(step.removed.items())))
        if step.added:
            lines.append("    added: " + ", ".join(f"{n} x{c}" for n, c in
                                                   sorted(step.added.items())))
        lines += [f"    new: {text}" for text in step.new_ops]
        return "\n".join(lines)


def _number_of(value: SSAValue, numbers: dict[Operation, int]) -> int | None:
    """The value number of the op defining `value` (None for block arguments)."""
    owner = value.owner
    return numbers.get(owner) if isinstance(owner, Operation) else None


def _short_form(op: Operation, limit: int = 300) -> str:
    """The op's printed form; constants only by type (their bytes would flood the report)."""
    if op.name in ("graph.constant", "graph.constant_of_shape"):
        return f"{op.name} : {op.results[0].type}"
    text = str(op).strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def bisect_pipeline(
    module: ModuleOp,
    passes: Pipeline,
    *,
    seed: int = 0,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    max_new_ops: int = 10,
) -> BisectReport:
    """Evaluate `module` before `passes` and after each one; report the first that drifts.

    `module` itself is rewritten by the passes (pass a clone to keep it). A pass that changes
    nothing is not re-evaluated."""
    from onnxc.pass_manager.pipeline_text import split_pipeline

    specs = split_pipeline(passes) if isinstance(passes, str) else list(passes)
    evaluator = MemoEvaluator(random_inputs(module, seed=seed))
    expected = evaluator.run(module)
    labels = output_labels(module)
    keys = evaluator.numbers(module)
    steps: list[PassStep] = []
    first: PassStep | None = None
    drift = 0.0
    for spec in specs:
        _apply(module, [spec])
        new_keys = evaluator.numbers(module)
        old_set, new_set = set(keys.values()), set(new_keys.values())
        step = PassStep(spec if isinstance(spec, str) else spec.name, drift)
        if old_set != new_set:
            before_counts = Counter(op.name for op in keys)
            after_counts = Counter(op.name for op in new_keys)
            step.removed, step.added = before_counts - after_counts, after_counts - before_counts
            fresh = [op for op, k in new_keys.items() if k not in old_set and
                     all(_number_of(v, new_keys) in old_set | {None} for v in op.operands)]
            step.new_ops = [_short_form(op) for op in fresh[:max_new_ops]]
            actual = evaluator.run(module)
            step.problems = [text for _, text in
                             drifting_outputs(expected, actual, rtol, atol, labels)]
            step.drift = max((output_drift(b, a) for b, a in zip(expected, actual)),
                             default=0.0) if len(expected) == len(actual) else float("inf")
            drift = step.drift
        steps.append(step)
        keys = new_keys
        if step.problems and first is None:
            first = step
            break
    return BisectReport(steps, first, rtol, atol)
