"""Sequence and optional graph inputs and outputs, for `onnxc.backend`
(docs/symbolic-and-control-flow.md, "Sequence and optional graph inputs and outputs").

onnxc compiles sequences as compile-time lists (frontend/onnx_ops_sequence.py), so a model
whose graph inputs or outputs are sequences or optionals is compiled per *signature* of its
container inputs: how many tensors each sequence input holds (and their dtypes and shapes),
and whether each optional input holds a value. Each signature is a tensor-only model: a
sequence input `s` of n tensors becomes inputs `s.0` .. `s.{n-1}` and a SequenceConstruct
(SequenceEmpty for n = 0), an optional input an Optional of its value or an empty Optional.
What the outputs hold is then known at compile time too: a probe model returns the length
of each sequence output (SequenceLength) and whether each optional output holds a value
(OptionalHasElement), and the model that runs returns their elements (SequenceAt,
OptionalGetElement) as tensors, which `ContainerModel.run` gives back as lists of arrays
and None or a value, as onnxruntime does. Any length works, as in onnxruntime; each new
signature costs a compile (cached).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxc.errors import InvalidInputError, UnsupportedOpError

_CONTAINERS = ("sequence_type", "optional_type")


def _kind(type_proto: onnx.TypeProto) -> str | None:
    return type_proto.WhichOneof("value")


def has_container_io(model: onnx.ModelProto) -> bool:
    """Whether a graph input or output of `model` is a sequence or an optional."""
    return any(_kind(vi.type) in _CONTAINERS
               for vi in [*model.graph.input, *model.graph.output])


def _arguments(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    initializers = {i.name for i in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in initializers]


class _Builder:
    """The tensor-only model of one signature: its new inputs, the nodes that rebuild the
    container inputs, and the feeds for its tensor inputs."""

    def __init__(self, constants: Sequence[str] = ()) -> None:
        self.inputs: list[onnx.ValueInfoProto] = []
        self.nodes: list[onnx.NodeProto] = []
        self.feeds: dict[str, np.ndarray] = {}
        self.key: list = []
        self.constants = set(constants)
        self.initializers: list[onnx.TensorProto] = []

    def tensor(self, name: str, elem_type: int, value) -> None:
        array = np.asarray(value)
        if elem_type == onnx.TensorProto.STRING:
            array = np.asarray(value, dtype=object)
        if name in self.constants:  # an op needs it at compile time: part of the signature
            self.initializers.append(numpy_helper.from_array(array, name))
            self.key.append((name, str(array.dtype), array.shape, array.tobytes()))
            return
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, list(array.shape)))
        self.feeds[name] = array
        self.key.append((name, str(array.dtype), array.shape))

    def sequence(self, name: str, type_proto: onnx.TypeProto, value) -> None:
        element = type_proto.sequence_type.elem_type
        if _kind(element) != "tensor_type":
            raise UnsupportedOpError("graph input", name, 0,
                                     "a sequence of non-tensors (maps or sequences)")
        if not isinstance(value, list | tuple):
            raise InvalidInputError(f"input '{name}' is a sequence: give a list of arrays, "
                                    f"got {type(value).__name__}")
        elem_type = element.tensor_type.elem_type
        parts = [f"{name}.{i}" for i in range(len(value))]
        for part, item in zip(parts, value):
            self.tensor(part, elem_type, item)
        self.key.append((name, "sequence", len(value)))
        if parts:
            self.nodes.append(helper.make_node("SequenceConstruct", parts, [name]))
        else:
            self.nodes.append(helper.make_node("SequenceEmpty", [], [name], dtype=elem_type))

    def optional(self, name: str, type_proto: onnx.TypeProto, value) -> None:
        element = type_proto.optional_type.elem_type
        self.key.append((name, "optional", value is not None))
        if value is None:
            self.nodes.append(helper.make_node("Optional", [], [name], type=element))
            return
        inner = f"{name}.value"
        if _kind(element) == "sequence_type":
            self.sequence(inner, element, value)
        else:
            self.tensor(inner, element.tensor_type.elem_type, value)
        self.nodes.append(helper.make_node("Optional", [inner], [name]))


def _specialized(model: onnx.ModelProto, feeds: Mapping[str, Any],
                 constants: Sequence[str]) -> tuple[onnx.ModelProto, _Builder]:
    """`model` with its container inputs rebuilt from tensor inputs for `feeds`, and the
    tensor inputs named in `constants` bound to their values."""
    built = _Builder(constants)
    for vi in _arguments(model):
        if vi.name not in feeds:
            raise InvalidInputError(f"missing input '{vi.name}'")
        kind, value = _kind(vi.type), feeds[vi.name]
        if kind == "sequence_type":
            built.sequence(vi.name, vi.type, value)
        elif kind == "optional_type":
            built.optional(vi.name, vi.type, value)
        else:
            built.tensor(vi.name, vi.type.tensor_type.elem_type, value)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    initializers = {i.name for i in model.graph.initializer}
    kept = [vi for vi in out.graph.input if vi.name in initializers]
    del out.graph.input[:]
    out.graph.input.extend([*built.inputs, *kept])
    out.graph.initializer.extend(built.initializers)
    nodes = [*built.nodes, *out.graph.node]
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out, built


def _with_outputs(model: onnx.ModelProto, nodes: Sequence[onnx.NodeProto],
                  outputs: Sequence[onnx.ValueInfoProto],
                  initializers: Sequence[onnx.TensorProto] = ()) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(initializers)
    del out.graph.output[:]
    out.graph.output.extend(outputs)
    return out


def _untyped(name: str) -> onnx.ValueInfoProto:
    return helper.make_empty_tensor_value_info(name)


class ContainerModel:
    """A model with sequence or optional graph inputs or outputs, compiled per signature of
    its container inputs (`compile` is how each tensor-only model is compiled)."""

    def __init__(self, model: onnx.ModelProto, compile, needs_constant) -> None:
        """`compile(model)`: a tensor-only model's CompiledModel; `needs_constant(error)`:
        the value an UnsupportedOpError says an op needs at compile time, if any (a graph
        input of tensors is then bound to its value, as SpecializingBackendRep does)."""
        self.model = model
        self._compile = compile
        self._needs_constant = needs_constant
        self.input_names = [vi.name for vi in _arguments(model)]
        self._tensor_inputs = {vi.name for vi in _arguments(model)
                               if _kind(vi.type) == "tensor_type"}
        self._constants: list[str] = []
        self._variants: dict[tuple, tuple] = {}

    def run(self, feeds: Mapping[str, Any]) -> list:
        """The outputs, in graph order: arrays, lists of arrays (sequences), None or a value
        (optionals)."""
        while True:
            model, built = _specialized(self.model, feeds, self._constants)
            key = tuple(built.key)
            variant = self._variants.get(key)
            if variant is not None:
                break
            try:
                variant = self._variants[key] = self._prepare(model, built.feeds)
                break
            except UnsupportedOpError as error:
                name = self._needs_constant(error)
                if name not in self._tensor_inputs or name in self._constants:
                    raise
                self._constants.append(name)
        compiled, layout = variant
        values = compiled.run(None, {n: built.feeds[n] for n in compiled.input_names})
        it = iter(values)
        return [self._regroup(shape, it) for shape in layout]

    @staticmethod
    def _regroup(shape, it):
        kind, detail = shape
        if kind == "tensor":
            return next(it)
        if kind == "sequence":
            return [next(it) for _ in range(detail)]
        return None if detail is None else ContainerModel._regroup(detail, it)

    def _prepare(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]):
        """Compile the probe (what each container output holds), then the model returning
        their elements as tensors; its compiled model and the outputs' layout."""
        graph_outputs = list(self.model.graph.output)
        probe_nodes, probe_outputs, pending = [], [], []
        for vi in graph_outputs:
            self._probe(vi.name, vi.type, probe_nodes, probe_outputs, pending)
        answers = {}
        if probe_outputs:
            probe = _with_outputs(model, probe_nodes, probe_outputs)
            compiled = self._compile(probe)
            got = compiled.run(None, {n: feeds[n] for n in compiled.input_names})
            answers = {vi.name: int(np.asarray(g).reshape(-1)[0])
                       for vi, g in zip(probe_outputs, got)}
        nodes, outputs, initializers, layout = [], [], [], []
        for vi in graph_outputs:
            layout.append(self._elements(vi.name, vi.type, answers, nodes, outputs,
                                         initializers))
        final = _with_outputs(model, nodes, outputs, initializers)
        return self._compile(final), layout

    def _probe(self, name, type_proto, nodes, outputs, pending) -> None:
        kind = _kind(type_proto)
        if kind == "sequence_type":
            nodes.append(helper.make_node("SequenceLength", [name], [f"{name}.length"]))
            outputs.append(_untyped(f"{name}.length"))
        elif kind == "optional_type":
            nodes.append(helper.make_node("OptionalHasElement", [name], [f"{name}.has"]))
            outputs.append(_untyped(f"{name}.has"))
            inner = type_proto.optional_type.elem_type
            if _kind(inner) == "sequence_type":
                # its length, read only when it has one (the probe's If keeps it valid)
                value = f"{name}.value"
                then = helper.make_graph(
                    [helper.make_node("OptionalGetElement", [name], [value]),
                     helper.make_node("SequenceLength", [value], [f"{name}.inner"])],
                    "has", [], [_untyped(f"{name}.inner")])
                empty = helper.make_graph(
                    [helper.make_node("Constant", [], [f"{name}.none"],
                                      value=numpy_helper.from_array(np.array(0, np.int64)))],
                    "empty", [], [_untyped(f"{name}.none")])
                nodes.append(helper.make_node("If", [f"{name}.has"], [f"{name}.length"],
                                              then_branch=then, else_branch=empty))
                outputs.append(_untyped(f"{name}.length"))
        elif kind != "tensor_type":
            raise UnsupportedOpError("graph output", name, 0, f"a {kind} output")

    def _elements(self, name, type_proto, answers, nodes, outputs, initializers):
        """Nodes returning the elements of output `name`; its layout entry."""
        kind = _kind(type_proto)
        if kind == "tensor_type":
            outputs.append(_untyped(name))
            return ("tensor", None)
        if kind == "sequence_type":
            length = answers[f"{name}.length"]
            for i in range(length):
                index = f"{name}.index{i}"
                initializers.append(numpy_helper.from_array(np.array(i, np.int64), index))
                nodes.append(helper.make_node("SequenceAt", [name, index], [f"{name}.{i}"]))
                outputs.append(_untyped(f"{name}.{i}"))
            return ("sequence", length)
        if not answers[f"{name}.has"]:
            return ("optional", None)
        value = f"{name}.value"
        nodes.append(helper.make_node("OptionalGetElement", [name], [value]))
        inner = type_proto.optional_type.elem_type
        if _kind(inner) == "sequence_type":
            answers = {**answers, f"{value}.length": answers[f"{name}.length"]}
        return ("optional", self._elements(value, inner, answers, nodes, outputs,
                                           initializers))


class CompiledContainerModel:
    """What `onnxc.compile` gives for a model with sequence or optional graph inputs or
    outputs: `run(output_names, feeds)` as CompiledModel's, a sequence input given as a
    list of arrays and an optional one as None or its value; sequence outputs come back as
    lists and optional ones as None or a value. Each new signature of the container inputs
    (lengths, dtypes and shapes, presence) compiles once, through the compile cache."""

    def __init__(self, model: onnx.ModelProto, compile) -> None:
        self._container = ContainerModel(model, compile, lambda error: None)
        self.input_names = list(self._container.input_names)
        self.output_names = [vi.name for vi in model.graph.output]

    def run(self, output_names: Sequence[str] | None, feeds: Mapping[str, Any]) -> list:
        if not isinstance(feeds, Mapping):
            raise InvalidInputError(
                f"feeds must be a mapping of input name to value, got {type(feeds).__name__}")
        unknown = [n for n in feeds if n not in self.input_names]
        missing = [n for n in self.input_names if n not in feeds]
        if unknown or missing:
            raise InvalidInputError(f"the model's inputs are {self.input_names}; unknown "
                                    f"{unknown}, missing {missing}")
        values = self._container.run(feeds)
        if output_names is None:
            return values
        index = {n: i for i, n in enumerate(self.output_names)}
        for name in output_names:
            if name not in index:
                raise InvalidInputError(f"unknown output name {name!r}; the model has "
                                        f"{self.output_names}")
        return [values[index[n]] for n in output_names]

    def __call__(self, *values: Any) -> list:
        """Positional form of `run(None, ...)`: one value per input, in model order."""
        if len(values) != len(self.input_names):
            raise InvalidInputError(f"expected {len(self.input_names)} input(s) "
                                    f"{self.input_names}, got {len(values)}")
        return self.run(None, dict(zip(self.input_names, values)))


__all__ = ["CompiledContainerModel", "ContainerModel", "has_container_io"]
