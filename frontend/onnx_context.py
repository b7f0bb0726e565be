"""What an op converter sees while importing one ONNX node.

Each ONNX value is a `Tensor`: its static type plus its SSA value, its constant data, or
both. Constants (initializers, Constant nodes, folded shape computations) are materialized
as `graph.constant` only when an op takes them as an operand, so values that end up as
properties (a Reshape's shape, Slice bounds, ...) leave no dead ops behind.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph import ConstantOp
from onnxc.errors import ModelLoadError, UnsupportedOpError
from onnxc.frontend import onnx_types as types
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

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def element_type(self) -> Attribute:
        return self.type.get_element_type()

    @staticmethod
    def of_array(array: np.ndarray, name: str = "") -> Tensor:
        onnx_type = types.onnx_type_of_numpy(array.dtype)
        if onnx_type is None:
            raise ValueError(f"numpy dtype {array.dtype} has no onnxc element type")
        ttype = types.tensor_type(tuple(array.shape), types.element_type(onnx_type))
        return Tensor(ttype, array=array, name=name)


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


def materialize(block: Block, tensor: Tensor) -> SSAValue:
    """The tensor's SSA value, appending a `graph.constant` to `block` on first use."""
    if tensor.value is None:
        assert tensor.array is not None
        op = ConstantOp(types.dense(tensor.array))
        block.add_op(op)
        op.output.name_hint = types.name_hint(tensor.name) if tensor.name else None
        tensor.value = op.output
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
        self.label = label
        self.opset = opset
        self._tensors = tensors
        self._block = block
        self._is_used = is_used
        self._attrs = {a.name: a for a in node.attribute}
        self.import_body = import_body
        """the importer's `import_body(graph, block, inputs) -> (block, outputs)`: how If,
        Loop and Scan import their subgraphs"""

    # ------------------------------------------------------------------ errors

    def unsupported(self, detail: str) -> UnsupportedOpError:
        return UnsupportedOpError(self.op_type, self.label, self.opset, detail)

    def invalid(self, detail: str) -> ModelLoadError:
        return ModelLoadError(f"node '{self.label}' ({self.op_type}, opset {self.opset}): {detail}")

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

    def shape(self, i: int) -> tuple[int, ...]:
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

    def output_used(self, i: int) -> bool:
        return i < len(self.node.output) and self.node.output[i] != "" and self._is_used(
            self.node.output[i]
        )

    # ------------------------------------------------------------------ building

    def infer(self, rule: Callable[..., tuple[int, ...]], *args) -> tuple[int, ...]:
        """Apply a `graph_shapes` rule; a shape error means the model is inconsistent."""
        try:
            return tuple(rule(*args))
        except (ValueError, IndexError) as err:
            raise self.invalid(str(err)) from err

    def check_size(self, shape: Sequence[int], itemsize: int,
                   what: str | Callable[[], str] = "a tensor") -> None:
        """ResourceLimitError naming the node when a tensor of `shape` would be larger than
        onnxc may allocate (see onnxc.resource_limits): call it before computing one."""
        check_tensor(shape, itemsize, lambda: f"node '{self.label}' ({self.op_type}): "
                                              f"{what() if callable(what) else what}")

    def emit(self, op: Operation) -> Operation:
        """Append `op`, verified: a failure means the model's shapes are inconsistent, a
        result too large to allocate is a ResourceLimitError naming the node."""
        try:
            op.verify()
        except VerifyException as err:
            raise self.invalid(str(err)) from err
        for result in op.results:
            if isinstance(t := result.type, TensorType):
                self.check_size(t.get_shape(), element_bytes(t.get_element_type()),
                                lambda t=t: f"its {t.get_element_type()} result")
        self._block.add_op(op)
        return op

    def emit1(self, op: Operation) -> SSAValue:
        """Append a single-result op and return its result."""
        return self.emit(op).results[0]

    def materialize(self, tensor: Tensor) -> SSAValue:
        return materialize(self._block, tensor)

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
        array = np.array(value, dtype=types.numpy_dtype_of_element(el))
        return self.materialize(Tensor.of_array(array))
