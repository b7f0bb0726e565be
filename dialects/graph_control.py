"""Control flow in the graph dialect: `graph.if`, `graph.loop` and their `graph.yield`
(which also ends the scalar body of a `graph.fused_elementwise`).

ONNX's If, Loop and Scan carry subgraphs; here they carry regions, imported recursively, that
may use any value of the enclosing scope (ONNX's outer-scope values). The bodies are ordinary
graph IR, so every graph pass runs inside them too. Scan is a `graph.loop` with a known
iteration count (frontend/onnx_ops_control.py).

    %r = graph.if(%cond) {
      graph.yield %a : tensor<2xf32>
    } else {
      graph.yield %b : tensor<2xf32>
    } : (tensor<i1>) -> tensor<2xf32>

    %final, %stacked = graph.loop(%max_trips, %cond, %init) {
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %x: tensor<2xf32>):
      ...
      graph.yield %c2, %x2, %slice : tensor<i1>, tensor<2xf32>, tensor<3xf32>
    } {iterations = 5 : i64}
      : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> (tensor<2xf32>, tensor<5x3xf32>)

A loop runs while `i < max_trips` and the condition holds; the body yields the next condition,
the next carried values, then one slice per scan output. Scan outputs need a known iteration
count: `iterations` says the loop always runs exactly that many times (the importer proves it:
a trip count known at compile time and a condition that stays true), and scan output k is
`[iterations, *slice_k]`. The count is a number or a size polynomial,
`{iterations = #graph.dims<["seq"]>}` for `for t in range(x.size(0))` over a symbolic `seq`.
A loop whose count only the run decides (a `while` with a data-dependent condition) may
still have scan outputs when it names a `trip_symbol`: a size symbol that is the number of
iterations it ran, known once it stopped. Its scan outputs are `[trip_symbol, *slice_k]`,
values of run-time length (lowering/graph_to_loops/control_flow.py says what may use them).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, ArrayAttr, IntegerAttr, StringAttr, TensorType, i1, i64
from xdsl.ir import Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import SymbolicDimsAttr, shape_of, tensor_type
from onnxc.dialects.graph_fused_elementwise import FusedElementwiseOp
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import Dim, SymbolicDimError, SymDim, sym_max


def _is_scalar_of(value: SSAValue, element) -> bool:
    t = value.type
    return (isinstance(t, TensorType) and t.get_element_type() == element
            and len(shape_of(t)) <= 1 and all(d == 1 for d in shape_of(t)))


def _types(types) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _yield_of(region: Region, what: str) -> YieldOp:
    if len(region.blocks) != 1:
        raise VerifyException(f"{what} must have exactly one block")
    last = region.block.last_op
    if not isinstance(last, YieldOp):
        raise VerifyException(f"{what} must end in graph.yield")
    return last


@irdl_op_definition
class IfOp(IRDLOperation):
    """ONNX If: run one of two regions by a one-element boolean; results are what it yields.

    Branches may yield tensors of different sizes (torchvision's `if boxes.numel() == 0`
    returns an empty tensor, else the boxes NMS kept): each result dimension where they differ
    is a run symbol the If defines (`defines`), the size of what the branch taken yielded."""

    name = "graph.if"
    cond = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    then_region = region_def("single_block")
    else_region = region_def("single_block")
    defines = opt_prop_def(ArrayAttr[StringAttr])
    traits = traits_def(RecursiveMemoryEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ("`(` $cond `)` $then_region `else` $else_region attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, cond: SSAValue, result_types, then_region: Region, else_region: Region,
                 defines: Sequence[str] = ()):
        props = {"defines": ArrayAttr([StringAttr(n) for n in defines])} if defines else {}
        super().__init__(operands=[cond], result_types=[result_types],
                         regions=[then_region, else_region], properties=props)

    def defined_names(self) -> list[str]:
        return [] if self.defines is None else [a.data for a in self.defines.data]

    def defined_positions(self) -> dict[str, tuple[int, int]]:
        """Each defined symbol's (result, dimension)."""
        names, found = set(self.defined_names()), {}
        for i, r in enumerate(self.outputs):
            for k, d in enumerate(shape_of(r)):
                if isinstance(d, SymDim) and len(d.symbols()) == 1 and str(d) in names:
                    found.setdefault(str(d), (i, k))
        return found

    def defined_sizes(self) -> dict[str, Dim | None]:
        """Each defined symbol's bound: the larger of the branches' sizes, where both have
        one in sizes known outside the If (a branch's own run symbols by their bounds)."""
        bounds: dict[str, Dim | None] = {}
        for name, (i, k) in self.defined_positions().items():
            sizes = [_bound_in(region, shape_of(_yield_of(region, "graph.if").values[i])[k])
                     for region in (self.then_region, self.else_region)]
            bounds[name] = None if None in sizes else sym_max(*sizes)
        return bounds

    def verify_(self) -> None:
        if not _is_scalar_of(self.cond, i1):
            raise VerifyException(f"graph.if: the condition must be one i1, not {self.cond.type}")
        results = [r.type for r in self.outputs]
        defined = set(self.defined_names())
        if defined - set(self.defined_positions()):
            raise VerifyException(f"graph.if: defines {sorted(defined)}, not all of them a "
                                  f"result dimension")
        for region, what in ((self.then_region, "then"), (self.else_region, "else")):
            if region.block.args:
                raise VerifyException(f"graph.if: the {what} region takes no arguments")
            yielded = [v.type for v in _yield_of(region, f"graph.if's {what} region").values]
            if len(yielded) != len(results) or not all(
                    _fits(y, r, defined) for y, r in zip(yielded, results)):
                raise VerifyException(f"graph.if: the {what} region yields {_types(yielded)}, "
                                      f"the op returns {_types(results)}")


def _fits(yielded, result, defined: set[str]) -> bool:
    """Whether a branch may yield `yielded` for a result of type `result`: the same type, or
    one differing only in dimensions that are symbols the If defines."""
    if yielded == result:
        return True
    if not (isinstance(yielded, TensorType) and isinstance(result, TensorType)) \
            or yielded.get_element_type() != result.get_element_type():
        return False
    a, b = shape_of(yielded), shape_of(result)
    return len(a) == len(b) and all(
        x == y or (isinstance(y, SymDim) and str(y) in defined) for x, y in zip(a, b))


def _bound_in(region: Region, size: Dim) -> Dim | None:
    """`size` (a branch's result dimension) bounded in sizes known outside the branch: a
    run symbol the branch defines is replaced by its bound (None when it has none, or when
    `size` is more than that one symbol)."""
    from onnxc.dialects.graph_dynamic import defined_sizes

    if isinstance(size, int):
        return size
    local: dict[str, Dim | None] = {}
    for op in region.walk():
        local.update(defined_sizes(op))
    if not size.symbols() & set(local):
        return size
    if len(size.symbols()) == 1 and str(size) in local:
        return local[str(size)]
    return None


@irdl_op_definition
class LoopOp(IRDLOperation):
    """ONNX Loop (and Scan): `body(i, cond, *carried) -> (cond, *carried, *scan slices)`."""

    name = "graph.loop"
    max_trips = operand_def(TensorType)
    condition = operand_def(TensorType)
    initial = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    iterations = opt_prop_def(IntegerAttr[I64] | SymbolicDimsAttr)
    trip_symbol = opt_prop_def(StringAttr)
    traits = traits_def(RecursiveMemoryEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ("`(` $max_trips `,` $condition (`,` $initial^)? `)` $body attr-dict `:` "
                       "functional-type(operands, results)")

    def __init__(self, max_trips: SSAValue, condition: SSAValue, initial, result_types,
                 body: Region, iterations: int | SymDim | None = None,
                 trip_symbol: str | None = None):
        props: dict = {} if iterations is None else {"iterations": _iterations_attr(iterations)}
        if trip_symbol is not None:
            props["trip_symbol"] = StringAttr(trip_symbol)
        super().__init__(operands=[max_trips, condition, initial], result_types=[result_types],
                         regions=[body], properties=props)

    @property
    def carried(self) -> int:
        return len(self.initial)

    @property
    def scan_outputs(self) -> tuple[SSAValue, ...]:
        return tuple(self.outputs[self.carried:])

    def iteration_count(self) -> int | SymDim | None:
        """How many times the loop runs, when known: a number, or a size polynomial."""
        if self.iterations is None:
            return None
        if isinstance(self.iterations, SymbolicDimsAttr):
            (count,) = self.iterations.values()
            return count
        return self.iterations.value.data

    def size_symbols(self) -> set[str]:
        """The symbols its iteration count names (beyond those of its types): what the
        lowering needs at run time to bound the loop (lowering/graph_to_loops/module_kernels.py's
        `symbols_of_op`)."""
        count = self.iteration_count()
        return count.symbols() if isinstance(count, SymDim) else set()

    def scan_length(self) -> int | SymDim | None:
        """The rows of each scan output: the iteration count, or the run-time count symbol."""
        if self.trip_symbol is not None:
            return SymDim.symbol(self.trip_symbol.data)
        return self.iteration_count()

    def verify_(self) -> None:
        if not _is_scalar_of(self.max_trips, i64):
            raise VerifyException("graph.loop: the trip count must be one i64")
        if not _is_scalar_of(self.condition, i1):
            raise VerifyException("graph.loop: the condition must be one i1")
        carried = [v.type for v in self.initial]
        args = [a.type for a in self.body.block.args]
        expected = [TensorType(i64, []), TensorType(i1, []), *carried]
        if args != expected:
            raise VerifyException(
                f"graph.loop: the body takes {_types(args)}, expected {_types(expected)}")
        terminator = _yield_of(self.body, "graph.loop's body")
        yielded = [v.type for v in terminator.values]
        if len(yielded) < 1 + len(carried) or not _is_scalar_of(terminator.values[0], i1):
            raise VerifyException("graph.loop: the body must yield the condition first")
        if yielded[1:1 + len(carried)] != carried:
            raise VerifyException(
                f"graph.loop: the body yields {_types(yielded[1:1 + len(carried)])} for "
                f"carried values of types {_types(carried)}")
        results = [r.type for r in self.outputs]
        if results[:len(carried)] != carried:
            raise VerifyException("graph.loop: the first results must be the carried values")
        slices = yielded[1 + len(carried):]
        scans = results[len(carried):]
        if len(slices) != len(scans):
            raise VerifyException(
                f"graph.loop: {len(slices)} scan slices yielded, {len(scans)} scan outputs")
        if isinstance(self.iterations, SymbolicDimsAttr) and len(self.iterations.dims) != 1:
            raise VerifyException("graph.loop: a symbolic iteration count is one size")
        if self.trip_symbol is not None:
            if self.iterations is not None:
                raise VerifyException("graph.loop: a loop of known count has no trip_symbol")
            try:
                if parse_dim(self.trip_symbol.data) != SymDim.symbol(self.trip_symbol.data):
                    raise SymbolicDimError("not a symbol name")
            except SymbolicDimError as err:
                raise VerifyException(
                    f"graph.loop: trip_symbol '{self.trip_symbol.data}': {err}") from err
        n = self.scan_length()
        if scans and n is None:
            raise VerifyException("graph.loop: scan outputs need a known iteration count or "
                                  "a trip_symbol")
        for k, (s, r) in enumerate(zip(slices, scans)):
            want = tensor_type([n, *shape_of(s)], s.get_element_type())
            if r != want:
                raise VerifyException(f"graph.loop: scan output {k} is {r}, expected {want}")


def _iterations_attr(count: int | SymDim) -> IntegerAttr | SymbolicDimsAttr:
    if isinstance(count, SymDim):
        return SymbolicDimsAttr([count])
    return IntegerAttr(count, i64)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The values a `graph.if` branch or a `graph.loop` iteration produces (tensors), or
    the element a `graph.fused_elementwise` body computes (a scalar); the parent checks."""

    name = "graph.yield"
    values = var_operand_def()
    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = traits_def(IsTerminator(), HasParent(IfOp, LoopOp, FusedElementwiseOp))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


CONTROL_OPS = (IfOp, LoopOp, YieldOp)

__all__ = ["CONTROL_OPS", "IfOp", "LoopOp", "YieldOp"]
