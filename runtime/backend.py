"""`onnxc.backend`: onnx's Backend interface, so onnx's own `BackendTest` suite runs on onnxc.

`prepare` compiles the model once; `BackendRep.run` takes the inputs positionally, in the
order of the graph's non-initializer inputs (what the suite feeds), or as a name -> array dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from onnxc.errors import InvalidInputError
from onnxc.runtime.compiled_model import CompiledModel


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
        return cls.supports_device(device)

    @classmethod
    def prepare(
        cls, model: onnx.ModelProto | str | bytes, device: str = "CPU", **kwargs: Any
    ) -> OnnxcBackendRep:
        from onnxc.api import compile

        if not cls.supports_device(device):
            raise RuntimeError(f"onnxc runs on the CPU only, not on {device}")
        options = {k: kwargs[k] for k in ("opt_level", "pass_pipeline") if k in kwargs}
        return OnnxcBackendRep(compile(model, **options))

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
