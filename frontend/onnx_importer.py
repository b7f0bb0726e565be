"""The ONNX -> graph dialect driver: one `func.func @main` per model.

The function's arguments are the graph inputs that are not initializers (old models list
initializers among the inputs too), in graph order; its results are the graph outputs.
Nodes are imported in topological order; each goes to its op family's converter table,
after an attempt to fold it when it is a tiny shape computation on constants. The tables are
per operator domain (`DOMAIN_CONVERTERS`): the default one, and com.microsoft
(onnx_ops_microsoft*.py: the contrib ops onnxruntime's tools write), whose converters see
that domain's opset version as `ctx.opset`.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import size_facts
from onnxc.dialects.dense_data import from_numpy
from onnxc.dialects.entry_abi import INPUT_DEFAULTS_ATTR
from onnxc.dialects.graph import is_symbolic, shape_of
from onnxc.dialects.graph_checks import GUARDS_ATTR, guards_attribute
from onnxc.dialects.symbolic_dims import Dim, SymbolicDimError, SymDim, symbol_name
from onnxc.errors import (
    InvalidInputError,
    ModelLoadError,
    OnnxcError,
    ShapeInferenceError,
    UnsupportedOpError,
)
from onnxc.frontend import onnx_types as types
from onnxc.frontend.batch_axes import with_fixed_shapes
from onnxc.frontend.input_symbols import split_symbols
from onnxc.frontend.onnx_context import (
    NodeContext,
    Result,
    Tensor,
    materialize,
    static_part,
    tensor_proto_to_array,
)
from onnxc.frontend.onnx_converters import checked_model, converter_for
from onnxc.frontend.onnx_fold import try_fold
from onnxc.frontend.onnx_model import (
    DEFAULT_DOMAINS,
    ModelSource,
    all_nodes,
    default_opset,
    domain_version,
    infer_types,
    load_model,
    node_label,
    node_reads,
    parse_text,
    topological_order,
)
from onnxc.frontend.onnx_ops_sequence import SEQUENCE_AWARE, is_container, scope_copy
from onnxc.frontend.onnx_ops_strings import HIDDEN_PREFIX, made_bytes
from onnxc.frontend.onnx_symbolic import output_terms
from onnxc.pass_manager.verifier import record_source
from onnxc.resource_limits import check_tensor, element_bytes


def _check_limited_types(ctx: NodeContext, results: list[Result]) -> None:
    """Refuse element types only a few kernels take (FLOAT16) on any other op."""
    values = [t.type for t in ctx.tensors() if isinstance(t, Tensor)]
    values += [r.type for r in results if isinstance(r, SSAValue)]
    detail = types.limited_type_detail(ctx.op_name, [v.get_element_type() for v in values])
    if detail is not None:
        raise ctx.unsupported(detail)


def _about_symbols(ctx: NodeContext, err: ModelLoadError) -> bool:
    """Whether a converter's inconsistency error is about symbolic sizes (it names one of the
    node's symbols, or a SymDim): they may be equal at run time, so it is no proof."""
    symbols = ctx.input_symbols()
    text = str(err)
    if getattr(err, "decided", False):  # a shape rule's verdict (NodeContext.infer)
        return False
    return bool(symbols) and ("SymDim(" in text or any(
        re.search(rf"(?<![\w.]){re.escape(s)}(?![\w(])", text) for s in symbols))


def _without_node(ctx: NodeContext, err: ModelLoadError) -> str:
    prefix = f"node '{ctx.label}' ({ctx.op_name}, opset {ctx.opset}): "
    return str(err).removeprefix(prefix)


def import_onnx(
    model: ModelSource, constant_inputs: Mapping[str, np.ndarray] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    initializers: Mapping[str, np.ndarray] | None = None,
) -> ModuleOp:
    """Import an ONNX model (path, serialized bytes or ModelProto) into the graph dialect.

    `constant_inputs` binds graph inputs to data known at compile time: they become
    constants (and leave the function's arguments), so that e.g. a Reshape whose shape is
    a graph input can be compiled, as in onnx-mlir's constant-input test mode.

    `input_shapes={"x": (1, 3, 224, 224)}` fixes the sizes of inputs with symbolic
    dimensions (as `onnxc.compile(..., input_shapes=)` does). Without it a `dim_param` is a
    symbolic dimension: the module is typed with SymDims (`#graph.dims`), one import for
    every size; what onnxc cannot express for every size is an UnsupportedOpError.

    `initializers`: the data of the model's initializers, read by an import of it that
    stopped (ImportStopped.initializers: not read twice).
    """
    from onnxc.frontend.batch_axes import check_input_shapes

    check_input_shapes(input_shapes)

    def load() -> onnx.ModelProto:
        proto = load_model(model)
        if input_shapes is None:
            return proto
        return with_fixed_shapes(proto, {k: tuple(v) for k, v in input_shapes.items()})

    module = OnnxImporter(load(), constant_inputs, initializers=initializers).run()
    # if a pass later leaves invalid IR, the pass is found by re-importing and replaying
    record_source(module, lambda: OnnxImporter(load(), constant_inputs).run())
    return module


def import_onnx_unless(model: ModelSource, stop_at: Callable[[Operation], bool]) -> ModuleOp:
    """`import_onnx(model)`, or ImportStopped as soon as a node becomes an op `stop_at` holds
    for (the rest of the model is not imported; the initializers it read go with the
    exception): onnxc/compilation.py imports a batch-separable model with its batch
    symbolic unless it has an op of static kernels."""
    module = OnnxImporter(load_model(model), stop_at=stop_at).run()
    record_source(module, lambda: OnnxImporter(load_model(model)).run())
    return module


def import_onnx_text(text: str) -> ModuleOp:
    """Import a model written in ONNX's textual syntax (as accepted by onnx.parser)."""
    module = OnnxImporter(parse_text(text)).run()
    record_source(module, lambda: OnnxImporter(parse_text(text)).run())
    return module


def static_type(type_proto: onnx.TypeProto, name: str, opset: int,
                symbolic: bool = False,
                renamed: Mapping[str, str] | None = None) -> TensorType | None:
    """The tensor type of a ValueInfo, None if ONNX did not fully infer it. With `symbolic`
    a `dim_param` is a symbolic dimension (`SymDim.symbol(symbol_name(param))`, or the
    symbol `renamed` gives it: input_symbols.split_symbols), and a dimension with neither
    value nor name (or the name "?") a symbol of its own, `<name>_dim<axis>`: two of them
    are independent unknowns; otherwise the type is None."""
    if not type_proto.HasField("tensor_type"):
        return None
    tt = type_proto.tensor_type
    if not tt.elem_type or not tt.HasField("shape"):
        return None
    dims: list[Dim] = []
    for axis, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif symbolic and d.dim_param not in ("", "?"):
            dims.append(SymDim.symbol((renamed or {}).get(d.dim_param)
                                      or symbol_name(d.dim_param)))
        elif symbolic:  # unnamed: an unknown of its own, as onnxruntime reads it
            dims.append(SymDim.symbol(f"{symbol_name(name)}_dim{axis}"))
        else:
            return None
    if not types.is_supported(tt.elem_type):
        raise UnsupportedOpError(
            "graph input", name, opset,
            f"element type {types.type_name(tt.elem_type)}; onnxc supports "
            f"{types.SUPPORTED_NAMES}",
        )
    return types.tensor_type(dims, types.element_type(tt.elem_type))


def _describe_dims(type_proto: onnx.TypeProto) -> str:
    if not type_proto.tensor_type.HasField("shape"):
        return "an unknown rank"
    dims = [d.dim_param or (str(d.dim_value) if d.HasField("dim_value") else "?")
            for d in type_proto.tensor_type.shape.dim]
    return f"shape [{', '.join(dims)}]"


def _fix_shape_hint(vi: onnx.ValueInfoProto) -> str:
    """How to fix a symbolic input's sizes, in the API's and onnxc-opt's words."""
    if not vi.type.tensor_type.HasField("shape"):
        return f"give its shape with input_shapes={{'{vi.name}': (...)}} or --input-shapes"
    dims = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
    return (f"fix its sizes with input_shapes={{'{vi.name}': {tuple(dims)}}} "
            f"(onnxc-opt --input-shapes {vi.name}={'x'.join(map(str, dims)) or '1'})")


class ImportStopped(Exception):
    """The importer made an op its `stop_at` holds for (import_onnx_unless)."""

    def __init__(self, op_name: str, initializers: Mapping[str, np.ndarray]):
        super().__init__(op_name)
        self.initializers = initializers
        """the data of the model's initializers, read: for its next import (`import_onnx`'s
        `initializers`)"""


class OnnxImporter:
    """Imports one model; create one per model."""

    def __init__(
        self, model: onnx.ModelProto, constant_inputs: Mapping[str, np.ndarray] | None = None,
        stop_at: Callable[[Operation], bool] | None = None,
        initializers: Mapping[str, np.ndarray] | None = None,
    ):
        model = checked_model(model)
        self.opset = default_opset(model)
        self.versions = {node.domain: domain_version(model, node.domain)
                         for node in all_nodes(model.graph) if node.domain not in DEFAULT_DOMAINS}
        """the model's version of each other operator domain its nodes use"""
        self.graph = model.graph
        self.ir_version = model.ir_version
        self.bound = self._check_constant_inputs(constant_inputs or {})
        self.inferred = infer_types(model, self.bound)
        self.misinferred: set[str] = set()
        """Values whose ONNX-inferred shape is wrong (see `_check_type`): not checked."""
        self.tensors: dict[str, Tensor] = {}
        self.block = Block()
        self.used = {name for node in self.graph.node for name in node_reads(node)}
        self.used.update(o.name for o in self.graph.output)
        self.guards: dict[str, tuple[size_facts.Guard, str, str]] = {}
        """guard text -> (guard, node, op_type): what the shape rules assumed of the
        symbolic sizes, first where a node assumed it"""
        self.stop_at = stop_at
        """ImportStopped as soon as a node becomes an op this holds for (in a body too)"""
        self.read: dict[str, np.ndarray] = dict(initializers or {})
        """the data of the graph's initializers: given (read by an earlier import of the
        model), else read from the model"""

    def _check_constant_inputs(
        self, constant_inputs: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        declared = {vi.name: vi for vi in self.graph.input}
        bound = {}
        for name, value in constant_inputs.items():
            array = np.asarray(value)
            if name not in declared:
                raise InvalidInputError(f"constant input '{name}' is not a graph input")
            if types.onnx_type_of_numpy(array.dtype) is None:
                raise InvalidInputError(
                    f"constant input '{name}' has dtype {array.dtype}; onnxc supports "
                    f"{types.SUPPORTED_NAMES}"
                )
            tt = declared[name].type.tensor_type
            if tt.elem_type and tt.elem_type != types.onnx_type_of_numpy(array.dtype):
                raise InvalidInputError(
                    f"constant input '{name}' has dtype {array.dtype}, but the model "
                    f"declares {types.type_name(tt.elem_type)}"
                )
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            if tt.HasField("shape") and (
                len(dims) != array.ndim
                or any(d is not None and d != n for d, n in zip(dims, array.shape))
            ):
                raise InvalidInputError(
                    f"constant input '{name}' has shape {list(array.shape)}, but the model "
                    f"declares {_describe_dims(declared[name].type)}"
                )
            bound[name] = array
        return bound

    def run(self) -> ModuleOp:
        initializer_names = self._add_initializers()
        for name, array in self.bound.items():
            self.tensors[name] = Tensor.of_array(array, name)
        initializer_names |= set(self.bound)
        overridable = self._overridable(initializer_names)
        inputs = [vi for vi in self.graph.input
                  if vi.name not in initializer_names or vi.name in overridable]
        # in the inputs' order: the same IR text for the same model, whatever the hash seed
        defaults = {vi.name: self.tensors[vi.name].array for vi in inputs
                    if vi.name in overridable}
        renamed = split_symbols(self.graph, inputs)
        for vi in inputs:
            self._add_argument(vi, renamed.get(vi.name))
        available = [vi.name for vi in inputs] + list(initializer_names)
        for index in topological_order(self.graph, available):
            self._import_node(self.graph.node[index], index)
        results = [self._output(vi) for vi in self.graph.output]
        hidden = made_bytes(self.block, self.opset)
        results += hidden
        self.block.add_op(ReturnOp(*results))
        func = FuncOp(
            "main",
            ([a.type for a in self.block.args], [r.type for r in results]),
            Region(self.block),
        )
        func.attributes["onnxc.input_names"] = ArrayAttr([StringAttr(vi.name) for vi in inputs])
        if defaults:
            func.attributes[INPUT_DEFAULTS_ATTR] = DictionaryAttr({
                name: from_numpy(array) for name, array in defaults.items()})
        func.attributes["onnxc.output_names"] = ArrayAttr(
            [StringAttr(vi.name) for vi in self.graph.output]
            + [StringAttr(f"{HIDDEN_PREFIX}{k}") for k in range(len(hidden))]
        )
        if self.guards:
            func.attributes[GUARDS_ATTR] = guards_attribute(list(self.guards.values()))
        return ModuleOp([func])

    def _overridable(self, initializer_names: set[str]) -> set[str]:
        """Graph inputs that also have an initializer, which a run may override (from IR
        version 4, as onnxruntime does; before it, ONNX listed every initializer among the
        inputs and they are constants). They stay run-time inputs: not folded."""
        if self.ir_version < 4:
            return set()
        return {vi.name for vi in self.graph.input
                if vi.name in initializer_names and vi.name not in self.bound}

    def _add_initializers(self, graph: onnx.GraphProto | None = None) -> set[str]:
        """The initializers of the model's graph (or of a subgraph) as constant Tensors."""
        graph = self.graph if graph is None else graph
        for sparse in graph.sparse_initializer:
            raise UnsupportedOpError("sparse initializer", sparse.values.name, self.opset,
                                     "sparse tensors are not supported")
        for init in graph.initializer:
            def unsupported(detail: str, name: str = init.name) -> UnsupportedOpError:
                return UnsupportedOpError("initializer", name, self.opset, detail)

            array = self.read.get(init.name) if graph is self.graph else None
            if array is None:
                if types.is_supported(init.data_type):  # before numpy allocates it
                    check_tensor(init.dims,
                                 np.dtype(types.numpy_dtype(init.data_type)).itemsize,
                                 f"initializer '{init.name}'")
                array = tensor_proto_to_array(init, f"initializer '{init.name}'", unsupported)
                if graph is self.graph:
                    self.read[init.name] = array
            self.tensors[init.name] = Tensor.of_array(array, init.name)
        return {init.name for init in graph.initializer}

    def _add_argument(self, vi: onnx.ValueInfoProto,
                      renamed: Mapping[str, str] | None = None) -> None:
        """A function argument; `dim_param` and unnamed dimensions become symbolic
        (SymDim); an input of unknown rank is a ShapeInferenceError."""
        ttype = static_type(vi.type, vi.name, self.opset, symbolic=True, renamed=renamed)
        if ttype is None:
            if not vi.type.HasField("tensor_type"):
                raise UnsupportedOpError("graph input", vi.name, self.opset,
                                         "only tensor inputs are supported")
            raise ShapeInferenceError(
                f"graph input '{vi.name}' has {_describe_dims(vi.type)}: onnxc needs "
                f"static or named (dim_param) dimensions; {_fix_shape_hint(vi)}"
            )
        check_tensor(static_part(shape_of(ttype)), element_bytes(ttype.get_element_type()),
                     lambda: f"graph input '{vi.name}' ({ttype.get_element_type()})")
        arg = self.block.insert_arg(ttype, len(self.block.args))
        arg.name_hint = types.name_hint(vi.name)
        self.tensors[vi.name] = Tensor(ttype, value=arg, name=vi.name)

    def _import_node(self, node: onnx.NodeProto, index: int) -> None:
        label = node_label(node, index)
        opset = self.opset if node.domain in DEFAULT_DOMAINS else self.versions[node.domain]
        ctx = NodeContext(node, label, opset, self.tensors, self.block,
                          self.used.__contains__, self.inferred, self.import_body)
        last_before = self.block.last_op
        if node.op_type == "Identity" and not ctx.domain \
                and is_container(self.tensors.get(node.input[0])):
            self.tensors[node.output[0]] = self.tensors[node.input[0]]
            return
        if node.op_type not in SEQUENCE_AWARE:
            for i, name in enumerate(node.input):
                if name and is_container(self.tensors.get(name)):
                    raise ctx.unsupported(f"input {i} ('{name}') is a sequence")
        with size_facts.recording() as guards:
            results = self._fold_or_convert(ctx)
        for guard in guards:
            self.guards.setdefault(guard.text(), (guard, label, node.op_type))
        self._name_checked_ops(last_before, label)
        if self.stop_at is not None:
            self._stop_at_new_ops(last_before)
        self._bind_outputs(ctx, results)

    def _stop_at_new_ops(self, last_before: Operation | None) -> None:
        assert self.stop_at is not None
        op = self.block.first_op if last_before is None else last_before.next_op
        while op is not None:
            if any(self.stop_at(o) for o in op.walk()):
                raise ImportStopped(op.name, self.read)
            op = op.next_op

    def _fold_or_convert(self, ctx: NodeContext) -> list[Result]:
        """The node's results: folded at import when it is a tiny shape computation on
        constants, else converted into graph ops."""
        node = ctx.node
        results: list[Result] | None = None if ctx.domain else try_fold(ctx)
        if results is None:
            converter = converter_for(ctx.domain, node.op_type)
            if converter is None:
                if ctx.input_symbols():
                    raise ctx.unsupported(
                        f"supported only on compile-time constant inputs, and its inputs "
                        f"depend on symbolic dimension(s) {', '.join(ctx.input_symbols())}")
                raise ctx.unsupported("supported only on compile-time constant inputs")
            try:
                results = converter(ctx)
                _check_limited_types(ctx, results)
            except ModelLoadError as err:
                if _about_symbols(ctx, err):
                    # a converter's own consistency check compared a symbolic size with
                    # another: they may be equal at run time, the model is valid
                    raise ctx.symbolic(SymbolicDimError(_without_node(ctx, err))) from err
                raise
            except OnnxcError:
                raise
            except SymbolicDimError as err:
                # a rule that needs a concrete size got a symbolic one: the model is valid
                raise ctx.symbolic(err) from err
            except (TypeError, ValueError, IndexError, KeyError, ArithmeticError,
                    VerifyException) as err:
                # e.g. an attribute of the wrong kind; never let a Python error escape. With
                # symbolic inputs it is most likely a rule that cannot handle their sizes.
                if ctx.input_symbols():
                    raise ctx.symbolic(err) from err
                raise ctx.invalid(f"{type(err).__name__}: {err}") from err
        return results

    def _bind_outputs(self, ctx: NodeContext, results: list[Result]) -> None:
        """Name the node's outputs after its results (checked against ONNX's types)."""
        for i, name in enumerate(ctx.node.output):
            result = results[i] if i < len(results) else None
            if not name:
                continue
            if result is None:
                if name in self.used:
                    raise ctx.unsupported(f"output {i} ('{name}')")
                continue
            if is_container(result):
                self.tensors[name] = result  # type: ignore[assignment]
                continue
            tensor = self._as_tensor(result, name)
            if tensor.array is None and tensor.terms is None:
                tensor.terms = output_terms(ctx, tensor)
            self._check_type(ctx, name, tensor.type)
            self.tensors[name] = tensor

    def import_body(self, body: onnx.GraphProto, block: Block,
                    inputs: Sequence[object]) -> tuple[Block, list[Tensor]]:
        """Import a subgraph (an If branch, a Loop or Scan body) into `block`, its inputs
        bound to `inputs`, in a scope that sees every value of this one; returns its outputs
        as Tensors, constant data included (a branch inlined into its parent folds on).
        Constants materialize in `block`, never in an enclosing one."""
        child = copy.copy(self)
        child.block = block
        child.tensors = {name: scope_copy(t) for name, t in self.tensors.items()}
        child.used = {name for node in body.node for name in node_reads(node)}
        child.used.update(o.name for o in body.output)
        if len(body.input) != len(inputs):
            raise ModelLoadError(f"subgraph '{body.name}' declares {len(body.input)} inputs, "
                                 f"its node gives it {len(inputs)}")
        for value, vi in zip(inputs, body.input):
            if is_container(value):  # a Loop's carried sequence (onnx_ops_sequence.py)
                child.tensors[vi.name] = value  # type: ignore[assignment]
                continue
            declared = static_type(vi.type, vi.name, self.opset)
            vtype = value.type
            assert isinstance(vtype, TensorType)
            if declared is not None and (
                    declared.get_element_type() != vtype.get_element_type()
                    or (not is_symbolic(vtype)
                        and math.prod(declared.get_shape()) != math.prod(vtype.get_shape()))):
                raise ModelLoadError(f"subgraph '{body.name}' declares input '{vi.name}' as "
                                     f"{declared}, but its node passes {vtype}")
            if value.name_hint is None:
                value.name_hint = types.name_hint(vi.name)
            child.tensors[vi.name] = Tensor(vtype, value=value, name=vi.name)
        child._add_initializers(body)
        for index in topological_order(body, list(child.tensors)):
            child._import_node(body.node[index], index)
        return child.block, [child.tensors[o.name] for o in body.output]

    def _name_checked_ops(self, last_before: Operation | None, label: str) -> None:
        """Record the node's name on the ops it became, as their location: MLIR's
        `loc("conv0")`, printed with --mlir-print-debuginfo; internal errors and run-time
        check failures name the node by it, and graph rewrites pass it on (passes/base.py)."""
        location = NameLoc(StringAttr(label), NoneAttr())
        op = self.block.first_op if last_before is None else last_before.next_op
        while op is not None:
            op.location = location
            op = op.next_op

    def _as_tensor(self, result: Result, name: str) -> Tensor:
        if isinstance(result, Tensor):
            if not result.name:
                result.name = name
            return result
        if isinstance(result, SSAValue):
            if result.name_hint is None:
                result.name_hint = types.name_hint(name)
            assert isinstance(result.type, TensorType)
            return Tensor(result.type, value=result, name=name)
        return Tensor.of_array(result, name)

    def _check_type(self, ctx: NodeContext, name: str, ours: TensorType) -> None:
        """Our result type must agree with ONNX's where ONNX inferred a static one."""
        theirs = self.inferred.get(name)
        if theirs is None or not theirs.HasField("tensor_type"):
            return
        tt = theirs.tensor_type
        if tt.elem_type and types.is_supported(tt.elem_type):
            if types.element_type(tt.elem_type) != ours.get_element_type():
                raise ShapeInferenceError(
                    f"node '{ctx.label}' ({ctx.op_name}): output '{name}' has element type "
                    f"{ours.get_element_type()} here but {types.type_name(tt.elem_type)} in ONNX"
                )
        if not tt.HasField("shape"):
            return
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        shape = shape_of(ours)
        # only where both are static: ONNX's dim_params and unknown dims, and our symbolic
        # ones (which ONNX may have named otherwise), are not compared
        if len(dims) != len(shape) or any(d is not None and isinstance(s, int) and d != s
                                          for d, s in zip(dims, shape)):
            if ctx.op_type == "Range" or not self.misinferred.isdisjoint(ctx.node.input):
                # ONNX infers Range's length in int64 and overflows (it gives
                # Range(-2**63, 2**63 - 1, 2**62) no elements); ours is exact, and whatever
                # ONNX inferred from its wrong length is wrong too
                self.misinferred.add(name)
                return
            raise ShapeInferenceError(
                f"node '{ctx.label}' ({ctx.op_name}): output '{name}' has shape "
                f"[{', '.join(str(d) for d in shape)}] here but {_describe_dims(theirs)} in "
                f"ONNX"
            )

    def _output(self, vi: onnx.ValueInfoProto) -> SSAValue:
        value = self.tensors[vi.name]
        if is_container(value):
            raise UnsupportedOpError("graph output", vi.name, self.opset,
                                     "a sequence: onnxc's inputs and outputs are tensors")
        return materialize(self.block, value)  # shape data: a graph.symbolic_constant
