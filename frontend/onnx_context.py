"""What an op converter sees while importing one ONNX node.

Each ONNX value is a `Tensor`: its type plus its SSA value, its constant data, or
both. Constants (initializers, Constant nodes, folded shape computations) are materialized
as `graph.constant` only when an op takes them as an operand, so values that end up as
properties (a Reshape's shape, Slice bounds, ...) leave no dead ops behind.

Types may have symbolic dimensions (`Tensor.shape` holds SymDims), and constant data may be
shape data with symbolic elements (onnx_shape_data.py), which materializes as a
`graph.symbolic_constant` (computed from the sizes at run time) only when an op takes it as
an operand; converters that read it as a property fold it instead. A shape
rule that cannot decide something about a symbolic size raises `SymbolicDimError`; the
context turns it into an UnsupportedOpError naming the node (`NodeContext.symbolic`): the
model is valid, onnxc cannot compile it generically yet.
"""

from __future__ import annotations

import copy
import re
from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.dense_data import element_dtype, from_numpy
from onnxc.dialects.graph import (
    BindSizesOp,
    CastOp,
    CheckIndicesOp,
    ConstantOp,
    GatherOp,
    SymbolicConstantOp,
    is_symbolic,
    shape_of,
)
from onnxc.dialects.graph_base import sizes_attr
from onnxc.dialects.graph_strings import StringsOp, encode_strings, string
from onnxc.dialects.symbolic_dims import Dim, SymbolicDimError, SymDim, symbol_name
from onnxc.errors import ModelLoadError, UnsupportedOpError
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_shape_data import (
    dims_of,
    is_symbolic_array,
    normalized,
    symbols_in,
)
from onnxc.resource_limits import check_tensor, element_bytes

# Folding tiny shape computations at import stops at this many elements per tensor.
FOLD_LIMIT = 1024


@dataclass(eq=False)
class Tensor:
    """One ONNX value during import."""

    type: TensorType
    value: SSAValue | None = None
    array: np.ndarray | None = None
    name: str = ""
    terms: list | None = None
    """for a small run-time integer tensor: each element as a constant or another run-time
    value's element plus a constant (frontend/onnx_symbolic.py)"""
    strings: np.ndarray | None = None
    """a string constant's elements (an object array of str or bytes; `array`, which folding
    reads, is for numbers and shape data only): a graph.strings when first used"""

    @property
    def shape(self) -> tuple[Dim, ...]:
        """The dimensions: ints, and a SymDim for each symbolic one."""
        return shape_of(self.type)

    @property
    def element_type(self) -> Attribute:
        return self.type.get_element_type()

    @property
    def symbolic_data(self) -> bool:
        """Whether the data is shape data with symbolic elements (never materialized)."""
        return is_symbolic_array(self.array)

    @staticmethod
    def of_array(array: np.ndarray, name: str = "", element: Attribute | None = None) -> Tensor:
        """A constant; an object array is shape data (onnx_shape_data.py) of integer type
        `element` (i64 unless given), made a plain array when nothing in it is symbolic."""
        if array.dtype.kind in "US" or _holds_text(array):
            return Tensor(types.tensor_type(array.shape, string), name=name,
                          strings=np.asarray(array, dtype=object))
        if array.dtype == object:
            el = i64 if element is None else element
            array = normalized(array, element_dtype(el))
            if array.dtype == object:
                return Tensor(types.tensor_type(array.shape, el), array=array, name=name)
        onnx_type = types.onnx_type_of_numpy(array.dtype)
        if onnx_type is None:
            raise ValueError(f"numpy dtype {array.dtype} has no onnxc element type")
        ttype = types.tensor_type(tuple(array.shape), types.element_type(onnx_type))
        return Tensor(ttype, array=array, name=name)


def _holds_text(array: np.ndarray) -> bool:
    """An object array of str or bytes: string data (shape data holds ints and sizes)."""
    return array.dtype == object and array.size > 0 \
        and isinstance(array.reshape(-1)[0], str | bytes)


def tensor_proto_to_array(
    proto: onnx.TensorProto, what: str, unsupported: Callable[[str], UnsupportedOpError]
) -> np.ndarray:
    """numpy data of a TensorProto, with typed errors for unsupported or broken data."""
    if not types.is_supported(proto.data_type):
        raise unsupported(
            f"{what} has element type {types.type_name(proto.data_type)}; onnxc supports "
            f"{types.SUPPORTED_NAMES}"
        )
    try:
        return numpy_helper.to_array(proto)
    except Exception as err:  # truncated raw_data, missing external file, ...
        raise ModelLoadError(f"cannot read the data of {what}: {err}") from err


def decided(err: ModelLoadError) -> ModelLoadError:
    """Mark `err` as a shape rule's verdict, which tells symbolic sizes apart: the importer
    then never reads it as a comparison that the symbols might satisfy at run time."""
    err.decided = True  # type: ignore[attr-defined]
    return err


def static_part(shape) -> list[int]:
    """`shape` with its symbolic dimensions as 1 (for the resource checks)."""
    return [1 if isinstance(d, SymDim) else int(d) for d in shape]


def materialize(block: Block, tensor: Tensor) -> SSAValue:
    """The tensor's SSA value, appending a `graph.constant` to `block` on first use (a
    `graph.symbolic_constant` for shape data with symbolic elements: its sizes are computed
    at run time, where an op needs the data as a tensor)."""
    if tensor.value is None and tensor.strings is not None:
        return _string_constant(block, tensor)
    if tensor.value is None:
        assert tensor.array is not None
        if tensor.symbolic_data:
            return _symbolic_constant(block, tensor)
        op = ConstantOp(from_numpy(tensor.array))
        block.add_op(op)
        op.output.name_hint = types.name_hint(tensor.name) if tensor.name else None
        tensor.value = op.output
    return tensor.value


def _string_constant(block: Block, tensor: Tensor) -> SSAValue:
    """String data as a `graph.strings` over two constants: its UTF-8 bytes and each
    element's (offset, length) in them (ModelLoadError for bytes that are not UTF-8)."""
    try:
        data, spans = encode_strings(tensor.strings)
    except ValueError as err:
        raise ModelLoadError(f"constant '{tensor.name}': {err}") from None
    constants = [ConstantOp(from_numpy(a)) for a in (data, spans)]
    op = StringsOp(operands=[c.output for c in constants], result_types=[tensor.type])
    for o in (*constants, op):
        block.add_op(o)
    tensor.value = op.output
    tensor.value.name_hint = types.name_hint(tensor.name) if tensor.name else None
    return tensor.value


def _symbolic_constant(block: Block, tensor: Tensor) -> SSAValue:
    """Shape data as a `graph.symbolic_constant` (i64 or i32; other integer types are a
    cast of the i64 data)."""
    el = tensor.element_type
    data_type = tensor.type if el in (i64, i32) else types.tensor_type(tensor.shape, i64)
    op: Operation = SymbolicConstantOp(dims_of(tensor.array), data_type)
    block.add_op(op)
    if data_type != tensor.type:
        op = CastOp(operands=[op.results[0]], result_types=[tensor.type])
        block.add_op(op)
    tensor.value = op.results[0]
    tensor.value.name_hint = types.name_hint(tensor.name) if tensor.name else None
    return tensor.value


Result = SSAValue | np.ndarray | Tensor | None


class NodeContext:
    """The node being imported, its operands and attributes, and where ops go."""

    _MISSING = object()

    def __init__(
        self,
        node: onnx.NodeProto,
        label: str,
        opset: int,
        tensors: dict[str, Tensor],
        block: Block,
        is_used: Callable[[str], bool],
        inferred: Mapping[str, onnx.TypeProto] | None = None,
        import_body: Callable[..., tuple[Block, list[Tensor]]] | None = None,
    ):
        self.node = node
        self._inferred = inferred or {}
        self.op_type = node.op_type
        self.domain = "" if node.domain in ("", "ai.onnx") else node.domain
        """the node's operator domain, "" for the default one (ai.onnx)"""
        self.label = label
        self.opset = opset
        """the model's version of the node's domain"""
        self._tensors = tensors
        self._block = block
        self._is_used = is_used
        self._attrs = {a.name: a for a in node.attribute}
        self.import_body = import_body
        """the importer's `import_body(graph, block, inputs) -> (block, outputs)`: how If,
        Loop and Scan import their subgraphs"""

    # ------------------------------------------------------------------ errors

    @property
    def op_name(self) -> str:
        """The op type as errors name it: qualified by its domain outside the default one
        (`com.microsoft.Attention`)."""
        return f"{self.domain}.{self.op_type}" if self.domain else self.op_type

    def unsupported(self, detail: str) -> UnsupportedOpError:
        return UnsupportedOpError(self.op_name, self.label, self.opset, detail)

    def invalid(self, detail: str) -> ModelLoadError:
        return ModelLoadError(f"node '{self.label}' ({self.op_name}, opset {self.opset}): {detail}")

    def input_symbols(self) -> list[str]:
        """The size symbols in the node's inputs' shapes and shape data."""
        values: list[object] = []
        for name in self.node.input:
            t = self._tensors.get(name) if name else None
            if isinstance(t, Tensor):
                values += t.shape
                if t.symbolic_data:
                    values += list(t.array.reshape(-1))
        return symbols_in(values)

    def run_symbol(self, what: str) -> str:
        """A fresh size symbol for a size this node computes from data in the run
        (graph_dynamic.py): named after the node and `what` (`NonZero_3_count`)."""
        base = re.sub(r"[^A-Za-z0-9_]", "_", self.label).strip("_") or "node"
        return symbol_name(f"{base}_{what}")

    def symbolic(self, err: Exception) -> UnsupportedOpError:
        """The error for a node that cannot be imported generically in its symbolic sizes
        (`err`: the SymbolicDimError, or what a rule raised on them)."""
        reason = str(err) if isinstance(err, SymbolicDimError) else \
            f"{type(err).__name__}: {err}"
        if "symbolic dimension(s)" not in reason:
            symbols = self.input_symbols()
            where = f"with symbolic dimension(s) {', '.join(symbols)}" if symbols else \
                "with symbolic dimensions"
            reason = f"{where}: {reason}"
        return self.unsupported(f"{reason} (fixing the sizes with input_shapes= compiles it)")

    # ------------------------------------------------------------------ inputs

    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    def has_input(self, i: int) -> bool:
        return i < len(self.node.input) and self.node.input[i] != ""

    def tensor(self, i: int) -> Tensor:
        if not self.has_input(i):
            raise self.invalid(f"input {i} is required")
        return self._tensors[self.node.input[i]]

    def tensors(self) -> list[Tensor]:
        return [self.tensor(i) for i in range(self.num_inputs) if self.has_input(i)]

    def shape(self, i: int) -> tuple[Dim, ...]:
        return self.tensor(i).shape

    def rank(self, i: int) -> int:
        return len(self.shape(i))

    def element_type(self, i: int) -> Attribute:
        return self.tensor(i).element_type

    def operand(self, i: int) -> SSAValue:
        return self.materialize(self.tensor(i))

    def operands(self) -> list[SSAValue]:
        return [self.materialize(t) for t in self.tensors()]

    def constant(self, i: int, what: str) -> np.ndarray:
        """The data of input `i`, which must be known at compile time."""
        if not self.has_input(i):
            raise self.invalid(f"input {i} ({what}) is required")
        array = self.tensor(i).array
        if array is None:
            raise self.unsupported(
                f"input {i} ({what}, '{self.node.input[i]}') must be a constant: an "
                f"initializer, a Constant node or a computation on them"
            )
        return array

    def sizes(self, i: int, what: str) -> list[Dim]:
        """The values of input `i`, a shape or a count: ints and SymDims when they are known
        at import (constants, shape data), else the sizes the run computes, bound to fresh
        run symbols (graph.bind_sizes, after a check that each is >= 0). Elements known to
        be constants (a Concat of constants and run-time values) stay ints."""
        from onnxc.frontend.onnx_symbolic import terms_of

        tensor = self.tensor(i)
        if tensor.array is not None:
            return dims_of(tensor.array)
        shape = tensor.shape
        if not all(isinstance(d, int) for d in shape) or len(shape) > 1 \
                or not isinstance(tensor.element_type, IntegerType):
            self.constant(i, what)  # raises, naming the value
        count = int(np.prod(shape))
        terms = terms_of(tensor) or [None] * count
        computed = [k for k, t in enumerate(terms) if t is None or t.root is not None]
        sizes: list[Dim] = [t.offset if t is not None else 0 for t in terms]
        if not computed:
            return sizes
        values = self.operand(i)
        if len(computed) < count:
            picked = np.array(computed, np.int64)
            values = self.emit1(GatherOp(
                operands=[values, self.materialize(Tensor.of_array(picked))],
                result_types=[TensorType(tensor.element_type, [len(computed)])],
                properties={"axis": IntegerAttr(0, i64)}))
        bound = self.bind_sizes(values, what, [f"{what}{k}" for k in computed])
        for k, size in zip(computed, bound):
            sizes[k] = size
        return sizes

    def bind_sizes(self, values: SSAValue, what: str, names: Sequence[str],
                   bounds: Sequence[Dim] | None = None) -> list[Dim]:
        """Fresh run symbols (`run_symbol(name)` each) for the elements of the 1-D integer
        tensor `values`, after a run-time check that each is >= 0 (an InvalidInputError
        naming this node and `what`); `bounds`: what the computation of `values` clamps
        them to."""
        symbols = [self.run_symbol(n) for n in names]
        self.emit(CheckIndicesOp(operands=[values], properties={
            "bounds": DenseArrayBase.from_list(i64, [2**63 - 1]),
            "negative": IntegerAttr(0, i64), "node": StringAttr(self.label),
            "op_type": StringAttr(self.op_type), "operand": StringAttr(what)}))
        properties: dict[str, Attribute] = {
            "defines": ArrayAttr([StringAttr(n) for n in symbols])}
        if bounds is not None:
            properties["bounds"] = sizes_attr(bounds)
        self.emit(BindSizesOp(operands=[values], properties=properties))
        return [SymDim.symbol(n) for n in symbols]

    def optional_constant(self, i: int, what: str) -> np.ndarray | None:
        return self.constant(i, what) if self.has_input(i) else None

    def known(self, i: int) -> np.ndarray | None:
        """Small constant data of input `i` for folding, or None."""
        if not self.has_input(i):
            return None
        array = self.tensor(i).array
        return array if array is not None and array.size <= FOLD_LIMIT else None

    # ------------------------------------------------------------------ attributes

    def attr(self, name: str, default=_MISSING):
        """The attribute's Python value (strings decoded, tensors as numpy arrays)."""
        proto = self._attrs.get(name)
        if proto is None:
            if default is self._MISSING:
                raise self.invalid(f"required attribute '{name}' is missing")
            return default
        if proto.type == onnx.AttributeProto.TENSOR:
            return tensor_proto_to_array(proto.t, f"attribute '{name}'", self.unsupported)
        value = onnx.helper.get_attribute_value(proto)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [v.decode() for v in value]
        return value

    def has_attr(self, name: str) -> bool:
        return name in self._attrs

    def ints(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        value = self.attr(name, None)
        return [int(v) for v in value] if value is not None else default

    # ------------------------------------------------------------------ outputs

    @property
    def num_outputs(self) -> int:
        return len(self.node.output)

    def inferred_shape(self, i: int) -> tuple[int, ...] | None:
        """ONNX's static shape of output `i` (shape inference or value_info), if it has one."""
        if i >= len(self.node.output) or self.node.output[i] not in self._inferred:
            return None
        t = self._inferred[self.node.output[i]]
        if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            return None
        dims = t.tensor_type.shape.dim
        if any(not d.HasField("dim_value") for d in dims):
            return None
        return tuple(d.dim_value for d in dims)

    def inferred_element(self, i: int) -> Attribute | None:
        """ONNX's element type of output `i`, if it inferred a supported one."""
        if i >= len(self.node.output) or self.node.output[i] not in self._inferred:
            return None
        t = self._inferred[self.node.output[i]]
        code = t.tensor_type.elem_type if t.HasField("tensor_type") else 0
        return types.element_type(code) if code and types.is_supported(code) else None

    def output_used(self, i: int) -> bool:
        return i < len(self.node.output) and self.node.output[i] != "" and self._is_used(
            self.node.output[i]
        )

    # ------------------------------------------------------------------ building

    def infer(self, rule: Callable[..., tuple[Dim, ...]], *args) -> tuple[Dim, ...]:
        """Apply a `graph_shapes` rule; a shape error means the model is inconsistent, one
        the symbolic sizes leave undecided that onnxc cannot import it generically."""
        try:
            return tuple(rule(*args))
        except SymbolicDimError as err:
            raise self.symbolic(err) from err
        except (ValueError, IndexError) as err:
            raise decided(self.invalid(str(err))) from err

    def check_size(self, shape: Sequence[Dim], itemsize: int,
                   what: str | Callable[[], str] = "a tensor") -> None:
        """ResourceLimitError naming the node when a tensor of `shape` would be larger than
        onnxc may allocate (see onnxc.resource_limits): call it before computing one.
        Symbolic dimensions count as 1 (the static part is checked)."""
        check_tensor(static_part(shape), itemsize,
                     lambda: f"node '{self.label}' ({self.op_type}): "
                             f"{what() if callable(what) else what}")

    def emit(self, op: Operation) -> Operation:
        """Append `op`, verified: a failure means the model's shapes are inconsistent, a
        result too large to allocate is a ResourceLimitError naming the node."""
        try:
            op.verify()
        except VerifyException as err:
            if isinstance(err.__cause__, SymbolicDimError):
                raise self.symbolic(err.__cause__) from err
            if any(is_symbolic(v) for v in (*op.operands, *op.results)):
                # sizes compared with a symbolic one may agree at run time: no proof
                raise self.symbolic(SymbolicDimError(str(err))) from err
            raise decided(self.invalid(str(err))) from err
        for result in op.results:
            if isinstance(t := result.type, TensorType):
                self.check_size(shape_of(t), element_bytes(t.get_element_type()),
                                lambda t=t: f"its {t.get_element_type()} result")
        self._block.add_op(op)
        return op

    def emit1(self, op: Operation) -> SSAValue:
        """Append a single-result op and return its result."""
        return self.emit(op).results[0]

    def materialize(self, tensor: Tensor) -> SSAValue:
        return materialize(self._block, tensor)

    def with_input(self, i: int, tensor: Tensor) -> NodeContext:
        """This node's context with input `i` read as `tensor` (a converter's rewrite of a
        constant input, e.g. symbolic Slice ends that are just "to the end")."""
        child = copy.copy(self)
        child._tensors = ChainMap({self.node.input[i]: tensor}, self._tensors)
        return child

    def in_block(self, block: Block) -> NodeContext:
        """This node's context, emitting into `block` (a loop body the converter builds)."""
        child = copy.copy(self)
        child._block = block
        return child

    @property
    def block(self) -> Block:
        """Where this node's ops go (an If with a constant condition imports its branch
        straight into it)."""
        return self._block

    def scalar(self, value: float, el: Attribute) -> SSAValue:
        """A rank-0 constant of element type `el` (for decompositions)."""
        array = np.array(value, dtype=element_dtype(el))
        return self.materialize(Tensor.of_array(array))
