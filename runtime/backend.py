"""`onnxc.backend`: onnx's Backend interface, so onnx's own `BackendTest` suite runs on onnxc.

`prepare` compiles the model once; `BackendRep.run` takes the inputs positionally, in the
order of the graph's non-initializer inputs (what the suite feeds), or as a name -> array dict.

Unsupported ops are reported, not failed: `is_compatible` returns False for a model holding
an op type onnxc has no converter for (onnx's BackendTest then skips the test with "Not
compatible with backend"), and `unsupported_op_types` names them. Anything `prepare` cannot
compile for a finer reason (an attribute value, an element type) raises
`UnsupportedByBackend`: still an UnsupportedOpError for callers, and a `unittest.SkipTest`,
so a test runner reports a skip (not a failure) for what onnxc says it does not support.
"""

from __future__ import annotations

import unittest
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from onnxc.errors import InvalidInputError, OnnxcError, UnsupportedOpError
from onnxc.runtime.compiled_model import CompiledModel


class UnsupportedByBackend(UnsupportedOpError, unittest.SkipTest):
    """An UnsupportedOpError that test runners (unittest, pytest) count as a skip."""

    @classmethod
    def wrap(cls, error: UnsupportedOpError) -> UnsupportedByBackend:
        return cls(error.op_type, error.node_name, error.opset, error.detail)


def unsupported_op_types(model: onnx.ModelProto) -> list[str]:
    """Op types in `model` (after inlining its local functions) that onnxc cannot import,
    in order of first use; empty when every op type has a converter."""
    from onnxc.frontend.onnx_fold import FOLDERS
    from onnxc.frontend.onnx_importer import CONVERTERS
    from onnxc.frontend.onnx_model import DEFAULT_DOMAINS, inline_functions

    try:
        model = inline_functions(model)
    except OnnxcError:
        return []  # prepare() reports the malformed model properly
    missing: dict[str, None] = {}
    for node in model.graph.node:
        if node.domain not in DEFAULT_DOMAINS:
            missing[f"{node.domain}.{node.op_type}"] = None
        elif node.op_type not in CONVERTERS and node.op_type not in FOLDERS:
            missing[node.op_type] = None
    return list(missing)


class OnnxcBackendRep(BackendRep):
    """A prepared (compiled) model."""

    def __init__(self, compiled: CompiledModel):
        self.compiled = compiled

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            if len(inputs) != len(self.compiled.input_names):
                raise InvalidInputError(
                    f"expected {len(self.compiled.input_names)} input(s) "
                    f"{self.compiled.input_names}, got {len(inputs)}"
                )
            feeds = dict(zip(self.compiled.input_names, inputs))
        return tuple(self.compiled.run(None, feeds))


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
    ) -> OnnxcBackendRep:
        from onnxc.api import compile

        if not cls.supports_device(device):
            raise RuntimeError(f"onnxc runs on the CPU only, not on {device}")
        options = {k: kwargs[k] for k in ("opt_level", "pass_pipeline") if k in kwargs}
        try:
            return OnnxcBackendRep(compile(model, **options))
        except UnsupportedOpError as error:
            if isinstance(error, UnsupportedByBackend):
                raise
            raise UnsupportedByBackend.wrap(error) from error

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
