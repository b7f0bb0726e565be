"""`onnxc.backend`: onnx's Backend interface, so onnx's own `BackendTest` suite runs on onnxc.

`prepare` compiles the model once; `BackendRep.run` takes the inputs positionally, in the
order of the graph's non-initializer inputs (what the suite feeds), or as a name -> array dict.

Unsupported ops are reported, not failed: `is_compatible` returns False for a model holding
an op type onnxc has no converter for in its domain (onnx's BackendTest then skips the test with "Not
compatible with backend"), and `unsupported_op_types` names them. Anything `prepare` cannot
compile for a finer reason (an attribute value, an element type) raises
`UnsupportedByBackend`: still an UnsupportedOpError for callers, and a `unittest.SkipTest`,
so a test runner reports a skip (not a failure) for what onnxc says it does not support.

onnxc compiles for static shapes, so operands that decide shapes (Reshape's shape, Slice's
starts, a reduction's axes, Pad's pads, Clip's bounds...) must be constants. When such an
operand is a graph input, as in many conformance tests, `prepare` returns a
`SpecializingBackendRep`: each run binds those inputs' values as initializers and compiles
that specialization (once per distinct set of values), as onnx-mlir's backend does.
"""

from __future__ import annotations

import re
import unittest
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from onnxc.compile_options import option_specs
from onnxc.container_io import ContainerModel, has_container_io
from onnxc.errors import InvalidInputError, LoweringError, OnnxcError, UnsupportedOpError
from onnxc.frontend.onnx_model import load_model
from onnxc.runtime.compiled_model import CompiledModel


class UnsupportedByBackend(UnsupportedOpError, unittest.SkipTest):
    """An UnsupportedOpError that test runners (unittest, pytest) count as a skip."""

    @classmethod
    def wrap(cls, error: UnsupportedOpError) -> UnsupportedByBackend:
        return cls(error.op_type, error.node_name, error.opset, error.detail)


def unsupported_op_types(model: onnx.ModelProto) -> list[str]:
    """Op types in `model` (after inlining its local functions) that onnxc cannot import,
    in order of first use; empty when every op type has a converter."""
    from onnxc.frontend.onnx_converters import converter_for
    from onnxc.frontend.onnx_fold import FOLDERS
    from onnxc.frontend.onnx_model import DEFAULT_DOMAINS, inline_functions

    try:
        model = inline_functions(model)
    except OnnxcError:
        return []  # prepare() reports the malformed model properly
    missing: dict[str, None] = {}
    for node in model.graph.node:
        default = node.domain in DEFAULT_DOMAINS
        if converter_for(node.domain, node.op_type) is None \
                and not (default and node.op_type in FOLDERS):
            missing[node.op_type if default else f"{node.domain}.{node.op_type}"] = None
    return list(missing)


class OnnxcBackendRep(BackendRep):
    """A prepared (compiled) model."""

    def __init__(self, compiled: CompiledModel):
        self.compiled = compiled

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        feeds = _positional_feeds(self.compiled.input_names, inputs)
        return tuple(self.compiled.run(None, feeds))


_NEEDS_CONSTANT = re.compile(r"input \d+ \([^)]*'([^']+)'\) must be a constant")


def _constant_operand(error: UnsupportedOpError) -> str | None:
    """The value an op needed as a compile-time constant, if that is why `error` was raised."""
    found = _NEEDS_CONSTANT.search(error.detail or "")
    return found.group(1) if found else None


def _graph_arguments(model: onnx.ModelProto) -> list[str]:
    initializers = {init.name for init in model.graph.initializer}
    return [vi.name for vi in model.graph.input if vi.name not in initializers]


def _to_bind(model: onnx.ModelProto, name: str | None, bound: Sequence[str]) -> list[str]:
    """The graph inputs to bind next so that the value `name` becomes a constant: `name`
    itself if it is a graph input, else (a value computed from inputs, e.g. a size cast to
    float) every integer or bool graph input not bound yet."""
    arguments = _graph_arguments(model)
    if name is None:
        return []
    if name in arguments:
        return [] if name in bound else [name]
    non_float = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.BOOL}
    return [vi.name for vi in model.graph.input if vi.name in arguments
            and vi.name not in bound and vi.type.tensor_type.elem_type in non_float]


def _positional_feeds(names: Sequence[str], inputs: Any) -> dict[str, Any]:
    """`inputs` (a mapping, one array or a sequence in graph order) as name -> value."""
    if isinstance(inputs, Mapping):
        return dict(inputs)
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    if len(inputs) != len(names):
        raise InvalidInputError(f"expected {len(names)} input(s) {list(names)}, got {len(inputs)}")
    return dict(zip(names, inputs))


class SpecializingBackendRep(BackendRep):
    """A model some of whose graph inputs onnxc needs as constants: every run binds their
    values as initializers and compiles that specialization, once per distinct value set."""

    def __init__(self, model: onnx.ModelProto, options: dict[str, Any], bound: list[str]):
        self.model = model
        self.options = options
        self.input_names = _graph_arguments(model)
        self.bound = list(bound)  # graph inputs bound at run time, grows as compiles ask
        self.variants: dict[tuple, CompiledModel] = {}

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        feeds = _positional_feeds(self.input_names, inputs)
        while True:
            values = {}
            for name in self.bound:
                if name not in feeds:
                    raise InvalidInputError(f"missing input '{name}'")
                values[name] = np.array(feeds[name], order="C")  # keeps a scalar 0-d
            key = tuple((n, v.dtype.str, v.shape, v.tobytes()) for n, v in values.items())
            compiled = self.variants.get(key)
            if compiled is None:
                try:
                    compiled = _compile(self._bind(values), self.options)
                except UnsupportedOpError as error:
                    more = _to_bind(self.model, _constant_operand(error), self.bound)
                    if more:
                        self.bound.extend(more)
                        continue
                    raise
                self.variants[key] = compiled
            return tuple(compiled.run(None, {n: feeds[n] for n in compiled.input_names}))

    def _bind(self, values: Mapping[str, np.ndarray]) -> onnx.ModelProto:
        """The model with `values` as initializers that are no longer graph inputs (an
        initializer still listed as an input would be overridable, not a constant)."""
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        model.graph.initializer.extend(
            numpy_helper.from_array(value, name) for name, value in values.items()
        )
        kept = [vi for vi in model.graph.input if vi.name not in values]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        return model


class ContainerBackendRep(BackendRep):
    """A model with sequence or optional graph inputs or outputs: compiled per signature of
    its container inputs (onnxc.container_io)."""

    def __init__(self, model: onnx.ModelProto, options: dict[str, Any]):
        self.container = ContainerModel(model, lambda m: _compile_container(m, options),
                                        _constant_operand)

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        feeds = _positional_feeds(self.container.input_names, inputs)
        return tuple(self.container.run(feeds))


def _compile_container(model: onnx.ModelProto, options: dict[str, Any]) -> CompiledModel:
    """_compile of one signature of a model with container inputs or outputs: a lowering
    limit (a loop's sequence whose elements change size) is reported as a skip too."""
    try:
        return _compile(model, options)
    except LoweringError as error:
        raise UnsupportedByBackend("lowering", "(a container signature)", 0,
                                   str(error)) from error


def compile_model(model: onnx.ModelProto | str | bytes, **options: Any) -> CompiledModel:
    """How the backend compiles: `onnxc.compile` (a name of this module, so that the warm-cache
    model tests can require every compile to be a cache hit)."""
    from onnxc.api import compile

    return compile(model, **options)


def _compile(model: onnx.ModelProto | str | bytes, options: dict[str, Any]) -> CompiledModel:
    """compile_model, with an unsupported op reported as a test skip too."""
    try:
        return compile_model(model, **options)
    except UnsupportedOpError as error:
        if isinstance(error, UnsupportedByBackend):
            raise
        raise UnsupportedByBackend.wrap(error) from error


class OnnxcBackend(Backend):
    """Compiles with `onnxc.compile`; runs on the host CPU only."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        """False when onnxc has no converter for some op type of `model` (see
        `unsupported_op_types`) or `device` is not the CPU."""
        if not cls.supports_device(device):
            return False
        return not isinstance(model, onnx.ModelProto) or not unsupported_op_types(model)

    @classmethod
    def prepare(
        cls, model: onnx.ModelProto | str | bytes, device: str = "CPU", **kwargs: Any
    ) -> BackendRep:
        """Compile `model`; see the module docstring for models with shape-deciding inputs."""
        if not cls.supports_device(device):
            raise RuntimeError(f"onnxc runs on the CPU only, not on {device}")
        options = {k: v for k, v in kwargs.items() if k in option_specs()}
        if isinstance(model, onnx.ModelProto) and has_container_io(model):
            return ContainerBackendRep(model, options)
        try:
            return OnnxcBackendRep(_compile(model, options))
        except UnsupportedOpError as error:
            name = _constant_operand(error)
            if name is None:
                raise
            proto = load_model(model)
            bound = _to_bind(proto, name, [])
            if not bound:
                raise
            return SpecializingBackendRep(proto, options, bound)

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Sequence[np.ndarray],
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, ...]] | None = None,
        **kwargs: Any,
    ) -> tuple[np.ndarray, ...]:
        raise NotImplementedError("onnxc compiles whole models: use prepare/run_model")

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return Device(device).type == DeviceType.CPU


is_compatible = OnnxcBackend.is_compatible
prepare = OnnxcBackend.prepare
run = OnnxcBackend.run_model
run_model = OnnxcBackend.run_model
supports_device = OnnxcBackend.supports_device
