"""Cold and warm passes of a model test (the `cache_pass` fixture, tests/models/conftest.py).

The cold pass compiles as a first-time user does and fills the suite's compile cache
($ONNXC_CACHE_DIR, one per test session: tests/conftest.py); the warm pass compiles the same
model again, which must be a cache hit, and its outputs must be bit-identical to the cold
pass's. A warm pass run on its own (`-k warm`) first fills the cache itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

import onnxc
from onnxc.runtime.compiled_model import CompiledModel

CACHE_PASSES = ("cold", "warm")
_cold_digests: dict[str, list[str]] = {}
"""test id (without the pass) -> digest of each output the cold pass saw, in order"""


def case_id(nodeid: str, pass_name: str) -> str:
    """A test's id without its pass: the same for its cold and warm runs, wherever pytest
    put the pass among the parameter ids ("[cold]", "[cold-x]", "[x-cold-y]", "[x-cold]")."""
    for pattern, replacement in ((f"[{pass_name}]", ""), (f"[{pass_name}-", "["),
                                 (f"-{pass_name}-", "-"), (f"-{pass_name}]", "]")):
        if pattern in nodeid:
            return nodeid.replace(pattern, replacement, 1)
    return nodeid


def output_digest(outputs: Sequence[np.ndarray]) -> str:
    """Dtypes, shapes and bytes of `outputs`: equal digests mean bit-identical outputs
    (string outputs, object arrays of str: each string's length and UTF-8 bytes)."""
    digest = hashlib.sha256()
    for array in outputs:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.dtype.name}{array.shape}".encode())
        if array.dtype == object:
            for text in array.reshape(-1):
                data = str(text).encode()
                digest.update(len(data).to_bytes(8, "little") + data)
            continue
        digest.update(array.view(np.uint8).reshape(-1).data if array.size else b"")
    return digest.hexdigest()


def compile_warm(model, filled: bool = False, **options) -> CompiledModel:
    """`onnxc.compile` that must be answered from the cache: compiled once first unless the
    cache is known to be `filled` (a hit anyway when the cold pass ran), then again, which
    is asserted to be a hit."""
    if not filled:
        onnxc.compile(model, **options)
    compiled = onnxc.compile(model, **options)
    assert compiled.from_cache, "the second compile of the same model was not a cache hit"
    return compiled


class CachePass:
    """One pass of a model test: how it compiles, and the record of what its runs gave."""

    def __init__(self, name: str, test_id: str):
        self.name = name
        self.test_id = test_id
        self.digests: list[str] = []

    def compile(self, model, **options) -> CompiledModel:
        """A fresh (cold) compile, or a cache hit (warm)."""
        if self.name == "cold":
            return onnxc.compile(model, **options)
        return compile_warm(model, filled=self.test_id in _cold_digests, **options)

    def outputs(self, outputs: Sequence[np.ndarray]) -> Sequence[np.ndarray]:
        """Record `outputs` (returned unchanged); the warm pass compares them with the cold
        pass's at the end of the test."""
        self.digests.append(output_digest(outputs))
        return outputs

    def finish(self) -> None:
        if self.name == "cold":
            _cold_digests[self.test_id] = self.digests
        elif self.test_id in _cold_digests:
            assert self.digests == _cold_digests[self.test_id], (
                "a cache hit gave outputs that differ from the fresh compile's")
