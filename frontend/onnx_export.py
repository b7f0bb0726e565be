"""Export a graph-dialect module (after the graph passes) back to a standard ONNX model.

onnxsim and onnxruntime users expect to save an optimized model and run it anywhere; this is
the reverse of the importer. Every graph op becomes standard ONNX nodes (the per-family
rules are in onnx_export_ops, _fused, _indexed, _quant, _vision, _recurrent and _control,
merged by `all_emitters`): graph constants become initializers, properties that ONNX takes as
inputs (Reshape's shape, Slice's bounds, Clip's bounds) become small initializers, and an
op with no single standard equivalent (a conv with an activation epilogue,
graph.fused_elementwise, CumProd of a later opset, ...) becomes one call of an ONNX *local
function* in the `onnxc` domain whose body is its decomposition into standard ops, so the
optimized graph keeps one node per kernel and any runtime can inline it.

Control flow (graph.if / graph.loop) becomes If / Loop whose subgraphs are the regions,
written by the same emitters (`OnnxWriter.subgraph`); a region's graph.yield gives the
subgraph's outputs.

An op the exporter cannot express raises UnsupportedOpError naming the op and where in the
model it comes from; nothing is ever dropped silently. The graph ops it never writes are
declared, each with its reason, in NOT_EXPORTED (run-time checks, ops that bind or define
sizes the run computes, an internal step of Unique, BitCast of a later opset), and that
reason is the error's. Nodes nothing reads are dropped at the end (an emitter may read
past what earlier ones wrote: a recurrence takes its layer's unprojected input).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue

from onnxc.dialects import graph, graph_strings
from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.entry_abi import (
    INPUT_NAMES_ATTR,
    OUTPUT_NAMES_ATTR,
    input_defaults,
    string_list,
)
from onnxc.dialects.graph import is_symbolic
from onnxc.dialects.graph_checks import onnx_node_of
from onnxc.errors import OnnxcError, UnsupportedOpError
from onnxc.frontend.onnx_types import onnx_type_of_element

OPSET = 23
"""The standard opset written: the first with Attention and RMSNormalization, and one that
onnxruntime 1.2x runs."""
IR_VERSION = 10
FUNCTION_DOMAIN = "onnxc"
"""The domain of the local functions that hold fused ops' decompositions."""


def onnx_element_type(value_or_type) -> int:
    """The ONNX data type of a tensor value's (or type's) elements."""
    t = value_or_type if isinstance(value_or_type, TensorType) else value_or_type.type
    assert isinstance(t, TensorType)
    return onnx_type_of_element(t.get_element_type())


def _plain(t: TensorType) -> bool:
    from xdsl.dialects.builtin import NoneAttr

    return isinstance(t.encoding, NoneAttr)


def numpy_dtype_of(value: SSAValue) -> np.dtype:
    assert isinstance(value.type, TensorType)
    return element_dtype(value.type.get_element_type())


def where(op: Operation) -> str:
    """Where `op` comes from, for error messages: its ONNX node's name (the importer's
    record), else the name of the value it computes."""
    return onnx_node_of(op) or _hint(op)


def _hint(op: Operation) -> str:
    names = [r.name_hint for r in op.results if r.name_hint]
    return names[0] if names else op.name.removeprefix("graph.")


def unsupported(op: Operation, detail: str = "") -> UnsupportedOpError:
    """The error for an op (or an op variant) that has no ONNX form here."""
    return UnsupportedOpError(op.name, where(op), OPSET,
                              detail or "the ONNX exporter has no rule for it")


class Sink:
    """Where emitters write nodes: the main graph or a local function's body. `const` puts
    a numpy array there (an initializer, or a Constant node in a function body)."""

    def __init__(self, names: set[str]):
        self.nodes: list[onnx.NodeProto] = []
        self._names = names

    def fresh(self, hint: str) -> str:
        """A value name not used anywhere in the model yet."""
        base = hint or "v"
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], *,
             domain: str = "", name: str | None = None, **attrs) -> onnx.NodeProto:
        node = helper.make_node(op_type, list(inputs), list(outputs), name=name,
                                domain=domain or None, **{k: v for k, v in attrs.items()
                                                          if v is not None})
        self.nodes.append(node)
        return node

    def apply(self, op_type: str, inputs: Sequence[str], hint: str, **attrs) -> str:
        """One node with one fresh output; returns the output's name."""
        out = self.fresh(hint)
        self.node(op_type, inputs, [out], **attrs)
        return out

    def const(self, array: np.ndarray, hint: str) -> str:
        raise NotImplementedError


class FunctionBody(Sink):
    """The body of one local function; constants are Constant nodes in it."""

    def const(self, array: np.ndarray, hint: str) -> str:
        out = self.fresh(hint)
        self.node("Constant", [], [out], value=numpy_helper.from_array(np.asarray(array), out))
        return out

    def node_with_refs(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str],
                       refs: dict[str, int]) -> onnx.NodeProto:
        """A body node whose attributes `refs` ({name: AttributeProto type}) take the values
        of the call's attributes of the same names."""
        node = self.node(op_type, inputs, outputs)
        node.attribute.extend(helper.make_attribute_ref(n, t) for n, t in refs.items())
        return node


class OnnxWriter(Sink):
    """The main graph being written: node names, value names, initializers, functions."""

    def __init__(self) -> None:
        super().__init__(set())
        self.initializers: list[onnx.TensorProto] = []
        self.value_names: dict[SSAValue, str] = {}
        self.value_info: list[onnx.ValueInfoProto] = []
        self.functions: dict[tuple, onnx.FunctionProto] = {}
        self._node_names: set[str] = set()
        self._function_names: set[str] = set()
        self.outputs: list[onnx.ValueInfoProto] = []
        """a subgraph's outputs, as its graph.yield wrote them"""

    def const(self, array: np.ndarray, hint: str) -> str:
        out = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), out))
        return out

    def typed(self, values: np.ndarray, data_type: int, hint: str) -> str:
        """An initializer of ONNX type `data_type` holding `values` (ints or floats, in
        their shape): for the types numpy has no dtype of (INT4, FLOAT8E4M3FN, ...)."""
        out = self.fresh(hint)
        values = np.asarray(values)
        self.initializers.append(helper.make_tensor(out, data_type, list(values.shape),
                                                    values.reshape(-1).tolist()))
        return out

    def ints(self, values: Sequence[int], hint: str) -> str:
        """A 1-D int64 initializer (shapes, axes, pads, split sizes)."""
        return self.const(np.asarray(list(values), dtype=np.int64), hint)

    def scalar(self, value: float, like: SSAValue, hint: str) -> str:
        """A 0-d initializer of `like`'s element type."""
        return self.const(np.asarray(value, dtype=numpy_dtype_of(like)), hint)

    def name(self, value: SSAValue) -> str:
        """The ONNX name of an SSA value (given to it the first time it is asked for)."""
        if value not in self.value_names:
            self.value_names[value] = self.fresh(value.name_hint or "v")
            if isinstance(value.type, TensorType):
                self.value_info.append(_value_info(self.value_names[value], value.type))
        return self.value_names[value]

    def names(self, values: Sequence[SSAValue | None]) -> list[str]:
        """Names of operands; an absent optional operand is ONNX's empty name."""
        return ["" if v is None else self.name(v) for v in values]

    def node_name(self, op: Operation) -> str:
        """The ONNX node's name: the importer's record of the op's node where present,
        else the name of what it computes; unique in the graph."""
        base = where(op)
        name, i = base, 0
        while name in self._node_names:
            i += 1
            name = f"{base}_{i}"
        self._node_names.add(name)
        return name

    def emit(self, op: Operation, op_type: str, inputs: Sequence[str], *,
             outputs: Sequence[str] | None = None, domain: str = "", **attrs) -> None:
        """The one node that computes `op`'s results."""
        outs = [self.name(r) for r in op.results] if outputs is None else outputs
        self.node(op_type, inputs, outs, domain=domain, name=self.node_name(op), **attrs)

    def subgraph(self) -> OnnxWriter:
        """A writer for a subgraph (If's branches, Loop's body): nodes and value_info of its
        own; value and node names, initializers (outer-scope values to the subgraph) and
        local functions shared with this writer. A graph.yield sets its `outputs`."""
        sub = copy.copy(self)
        sub.nodes, sub.value_info = [], []
        sub.outputs = []
        return sub

    def function(self, key: tuple, base_name: str, inputs: Sequence[str],
                 outputs: Sequence[str], build: Callable[[FunctionBody], None],
                 attributes: Sequence[str] = ()) -> str:
        """The name of the local function `key` identifies, built by `build` (given the
        body, whose formal inputs are `inputs`) on first use."""
        if key not in self.functions:
            name, i = base_name, 0
            while name in self._function_names:
                i += 1
                name = f"{base_name}_{i}"
            self._function_names.add(name)
            body = FunctionBody(set(inputs) | set(outputs))
            build(body)
            self.functions[key] = helper.make_function(
                FUNCTION_DOMAIN, name, list(inputs), list(outputs), body.nodes,
                [helper.make_opsetid("", OPSET)], attributes=list(attributes))
        return self.functions[key].name


def _value_info(name: str, t: TensorType) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, onnx_element_type(t), list(t.get_shape()))


def value_info(name: str, value: SSAValue) -> onnx.ValueInfoProto:
    """A graph input or output named `name` of `value`'s type."""
    assert isinstance(value.type, TensorType)
    return _value_info(name, value.type)


Emitter = Callable[[OnnxWriter, Operation], None]

_RUN_TIME_CHECK = ("a run-time check of the data (ONNX has no op that stops a run on bad "
                   "data, and the exporter drops nothing silently)")
_RUN_TIME_SIZES = ("symbolic dimensions are not exported yet: the exporter writes static "
                   "shapes only")

_MADE_BYTES = ("its strings' bytes are a hidden output of the model (docs/strings.md), which "
               "ONNX's StringConcat / StringNormalizer / Cast have no counterpart of")

NOT_EXPORTED: dict[type[Operation], str] = {
    graph.CheckIndicesOp: _RUN_TIME_CHECK,
    graph.CheckDivisorOp: _RUN_TIME_CHECK,
    graph.CheckSizesOp: _RUN_TIME_CHECK,
    graph.BindSizesOp: ("it makes run-time data the sizes of later tensors; "
                        + _RUN_TIME_SIZES),
    graph.SymbolicConstantOp: ("its values are sizes that are symbolic at compile time; "
                               + _RUN_TIME_SIZES),
    graph.NonZeroOp: "its result's length is a size the run defines; " + _RUN_TIME_SIZES,
    graph.NonMaxSuppressionOp: ("its result's length is a size the run defines; "
                                + _RUN_TIME_SIZES),
    graph.LexOrderOp: ("an internal step of Unique along an axis (whose result's length the "
                       "run defines): no ONNX op sorts slices lexicographically"),
    graph.BitCastOp: (f"ONNX has BitCast from opset 26 only; the exporter writes opset "
                      f"{OPSET}, whose ops cannot reinterpret bytes"),
    graph_strings.StringSplitOp: ("its pieces' last dimension is a size the run defines; "
                                  + _RUN_TIME_SIZES),
    graph_strings.StringKeepOp: ("its result's length is a size the run defines; "
                                 + _RUN_TIME_SIZES),
    graph_strings.StringConcatOp: _MADE_BYTES,
    graph_strings.StringCaseOp: _MADE_BYTES,
    graph_strings.StringOfIntegersOp: _MADE_BYTES,
    graph_strings.IntegersOfStringsOp: ("an internal step of Cast from STRING (the parse; a "
                                        "run-time check and a Cast follow)"),
    graph_strings.StringLookupOp: ("an internal step of ai.onnx.ml LabelEncoder's string keys "
                                   "(a trie of the keys), whose other steps are standard ops"),
}
"""The graph ops the exporter never writes, each with its reason (the UnsupportedOpError's
detail): run-time checks, ops that exist for symbolic sizes, internal steps of an ONNX op
whose other steps are not exported, and ops of a later opset than OPSET."""


@functools.cache
def all_emitters() -> dict[type[Operation], Emitter]:
    """Every graph op's emitter, merged from the family modules' tables."""
    from onnxc.frontend.onnx_export_control import CONTROL_EMITTERS
    from onnxc.frontend.onnx_export_fused import FUSED_EMITTERS
    from onnxc.frontend.onnx_export_indexed import INDEXED_EMITTERS
    from onnxc.frontend.onnx_export_ops import EMITTERS
    from onnxc.frontend.onnx_export_quant import QUANT_EMITTERS
    from onnxc.frontend.onnx_export_recurrent import RECURRENT_EMITTERS
    from onnxc.frontend.onnx_export_strings import STRING_EMITTERS
    from onnxc.frontend.onnx_export_trees import TREE_EMITTERS
    from onnxc.frontend.onnx_export_vision import VISION_EMITTERS

    tables = (EMITTERS, FUSED_EMITTERS, INDEXED_EMITTERS, QUANT_EMITTERS, VISION_EMITTERS,
              RECURRENT_EMITTERS, CONTROL_EMITTERS, STRING_EMITTERS, TREE_EMITTERS)
    merged: dict[type[Operation], Emitter] = {}
    for table in tables:
        assert not merged.keys() & table.keys(), merged.keys() & table.keys()
        merged.update(table)
    assert not merged.keys() & NOT_EXPORTED.keys()
    return merged


def emit_ops(w: OnnxWriter, ops: Iterable[Operation]) -> None:
    """Write `ops` (a block's, in order) with their emitters: UnsupportedOpError for a
    declared op (its reason), a value with no ONNX type, or an op with no emitter."""
    emitters = all_emitters()
    for op in ops:
        if type(op) in NOT_EXPORTED:
            raise unsupported(op, NOT_EXPORTED[type(op)])
        for result in op.results:
            _check_plain(result, op)
        emitter = emitters.get(type(op))
        if emitter is None:
            raise unsupported(op)
        emitter(w, op)


def region_graph(w: OnnxWriter, op: Operation, block: Block, name: str,
                 inputs: Sequence[onnx.ValueInfoProto] = ()) -> onnx.GraphProto:
    """The subgraph computing `block` (a region of `op`, ending in graph.yield), whose
    arguments are named as `inputs` are; the ops inside use outer values by their names."""
    sub = w.subgraph()
    for arg, info in zip(block.args, inputs, strict=True):
        _check_plain(arg, op)
        sub._names.add(info.name)
        sub.value_names[arg] = info.name
    emit_ops(sub, block.ops)
    declared = {i.name for i in inputs} | {o.name for o in sub.outputs}
    return helper.make_graph(sub.nodes, name, list(inputs), sub.outputs,
                             value_info=[v for v in sub.value_info if v.name not in declared])


def export_onnx(module: ModuleOp, *, producer: str = "onnxc") -> onnx.ModelProto:
    """The standard ONNX model (opset OPSET plus `onnxc` local functions) that computes what
    the graph-dialect `module` computes, with its inputs' and outputs' names, types and
    shapes. UnsupportedOpError for an op (or a layout-typed tensor) it cannot express."""
    entry = _entry(module)
    w = OnnxWriter()
    block = entry.body.block
    in_names = string_list(entry, INPUT_NAMES_ATTR) or [
        arg.name_hint or f"input_{i}" for i, arg in enumerate(block.args)]
    out_names = string_list(entry, OUTPUT_NAMES_ATTR)
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    out_names = out_names or [f"output_{i}" for i in range(len(ret.arguments))]
    w._names.update(out_names)  # no intermediate value may take an output's name
    inputs = []
    for arg, name in zip(block.args, in_names):
        _check_plain(arg, entry)
        w._names.add(name)
        w.value_names[arg] = name
        inputs.append(_value_info(name, arg.type))
    # an input with a default (ONNX: also an initializer) stays overridable
    for name, array in input_defaults(entry).items():
        w.initializers.append(numpy_helper.from_array(array, name))
    # an output computed by an op takes the output's name; one that is a graph input, a
    # constant or another output's value is copied by an Identity
    direct: dict[SSAValue, str] = {}
    for value, name in zip(ret.arguments, out_names):
        owner = value.owner
        if (isinstance(owner, Operation) and owner.name != "graph.constant"
                and value not in direct):
            direct[value] = name
            w.value_names[value] = name
    emit_ops(w, (op for op in block.ops if op is not ret))
    outputs = []
    for value, name in zip(ret.arguments, out_names):
        if direct.get(value) != name:
            w.node("Identity", [w.name(value)], [name], name=w.fresh(f"{name}_identity"))
        outputs.append(_value_info(name, value.type))
    _prune(w, [o.name for o in outputs], {i.name for i in inputs})
    declared = {i.name for i in inputs} | {o.name for o in outputs}
    main = helper.make_graph(
        w.nodes, entry.sym_name.data, inputs, outputs, w.initializers,
        value_info=[v for v in w.value_info if v.name not in declared])
    opsets = [helper.make_opsetid("", OPSET)]
    if _uses_domain(w.nodes, MICROSOFT_DOMAIN):  # MatMulNBits (onnx_export_quant.py)
        opsets.append(helper.make_opsetid(MICROSOFT_DOMAIN, 1))
    if _uses_domain(w.nodes, "ai.onnx.ml"):  # tree ensembles (onnx_export_trees.py)
        opsets.append(helper.make_opsetid("ai.onnx.ml", 3))
    if w.functions:
        opsets.append(helper.make_opsetid(FUNCTION_DOMAIN, 1))
    model = helper.make_model(main, opset_imports=opsets, ir_version=IR_VERSION,
                              producer_name=producer, functions=list(w.functions.values()))
    _check(model)
    return model


def _prune(w: OnnxWriter, outputs: Sequence[str], inputs: set[str]) -> None:
    """Drop the nodes nothing reads (an emitter may read past them: a recurrence takes the
    unprojected input and weight, onnx_export_recurrent), then the initializers and
    value_info they leave unused (not those of inputs with defaults)."""
    read = set(outputs)
    kept: list[onnx.NodeProto] = []
    for node in reversed(w.nodes):
        if any(name in read for name in node.output):
            kept.append(node)
            read.update(_reads(node))
    kept.reverse()
    w.nodes[:] = kept
    w.initializers[:] = [t for t in w.initializers if t.name in read or t.name in inputs]
    produced = {name for node in kept for name in node.output}
    w.value_info[:] = [v for v in w.value_info if v.name in produced]


def _reads(node: onnx.NodeProto) -> set[str]:
    """The names `node` reads: its inputs and what the nodes of its subgraphs read (outer
    scope values included)."""
    names = {name for name in node.input if name}
    for attr in node.attribute:
        for sub in [attr.g, *attr.graphs] if attr.type in (
                onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) else []:
            for inner in sub.node:
                names |= _reads(inner)
    return names


MICROSOFT_DOMAIN = "com.microsoft"


def _uses_domain(nodes: Sequence[onnx.NodeProto], domain: str) -> bool:
    """Whether a node of `nodes`, or of a subgraph of theirs, is of `domain`."""
    for node in nodes:
        if node.domain == domain:
            return True
        for attr in node.attribute:
            graphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
            if any(_uses_domain(g.node, domain) for g in graphs):
                return True
    return False


def _check(model: onnx.ModelProto) -> None:
    """onnx's full check (with shape inference) of what we wrote: a failure is onnxc's bug,
    reported as such. The in-memory checker stops at protobuf's 2 GB limit."""
    if model.ByteSize() >= 2**31:
        return
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as err:
        raise OnnxcError(f"internal error: the exported ONNX model fails onnx.checker: "
                         f"{err}") from err


def _entry(module: ModuleOp) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(functions) != 1:
        raise UnsupportedOpError("builtin.module", "", OPSET,
                                 f"the exporter reads a module with one graph function, "
                                 f"not {len(functions)} (was it lowered past the graph "
                                 f"dialect?)")
    return functions[0]


def _check_plain(value: SSAValue, op: Operation) -> None:
    """Only plain static tensors have an ONNX type: a layout-encoded tensor is internal to
    onnxc's kernels."""
    t = value.type
    if is_symbolic(t):
        raise UnsupportedOpError(op.name, where(op), OPSET,
                                 f"value of type {t} has symbolic dimensions: exporting them "
                                 f"(shapes computed at run time) is not supported yet")
    if not isinstance(t, TensorType) or not _plain(t):
        raise UnsupportedOpError(op.name, where(op), OPSET,
                                 f"value of type {t} has no ONNX type (layout-specific "
                                 "tensors exist only inside onnxc's lowering)")
