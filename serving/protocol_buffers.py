"""Triton's protocol messages, compiled from the vendored .protos when first used.

grpcio-tools compiles `protos/*.proto` in-process (`grpc.protos_and_services`), so no
generated code is committed and the messages always match the protobuf runtime installed
(tritonclient pins protobuf < 7; generated code from a newer protoc would refuse to load).
The modules register under their protoc names (`grpc_service_pb2`, `model_config_pb2`): the
server process must not also import tritonclient's copies of the same files.
"""

from __future__ import annotations

import functools
import sys
from importlib import resources
from types import ModuleType


def _protos_dir() -> str:
    return str(resources.files("onnxc.serving") / "protos")


@functools.cache
def grpc_service() -> tuple[ModuleType, ModuleType]:
    """(messages, services) of `inference.GRPCInferenceService` (grpc_service.proto)."""
    import grpc  # only `onnxc serve` needs grpcio

    directory = _protos_dir()
    sys.path.append(directory)
    try:
        return grpc.protos_and_services("grpc_service.proto")
    finally:
        sys.path.remove(directory)


def model_config() -> ModuleType:
    """`inference.ModelConfig` and its parts (model_config.proto), for config.pbtxt files."""
    grpc_service()  # compiles model_config.proto too, as an import of grpc_service.proto
    return sys.modules["model_config_pb2"]
