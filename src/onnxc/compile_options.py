"""`CompileOptions`: what decides the code of one compile, as one frozen value.

`onnxc.compile` and `onnxc.compile_artifact` check their arguments (onnxc.arguments) and
resolve them once into this value (`CompileOptions.of`: the thread count, the target); the
stages read its fields instead of a dozen positional arguments passed from function to
function. Its fields that change code are the compile cache's key (`key_text`, derived from
the fields themselves): an option added here is in the key by construction, so a forgotten
one can never give a wrong cache hit. A field that changes nothing compiled says so with
`metadata={"key": False}`.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from onnxc.target import Target, host_target, parse_target

Shapes = tuple[tuple[str, tuple[int, ...]], ...]
"""`input_shapes` frozen: (name, dims) pairs sorted by name"""


@dataclass(frozen=True)
class CompileOptions:
    """One compile's options, resolved (see the module docstring)."""

    opt_level: int = 3
    pass_pipeline: str | tuple[str, ...] | None = None
    """pipeline text, pass names, or None for opt_level's pipeline"""
    num_threads: int = 1
    """the thread count compiled into parallel loops (resolved: never None)"""
    input_shapes: Shapes | None = None
    precision: str = "fp32"
    target: Target = field(default_factory=host_target)
    verify_numerics: bool = field(default=False, metadata={"key": False})
    """checks the graph passes; what it compiles is what a compile without it compiles"""

    @classmethod
    def of(cls, *, opt_level: int = 3, pass_pipeline: str | Sequence[str] | None = None,
           num_threads: int | None = None,
           input_shapes: Mapping[str, Sequence[int]] | None = None,
           precision: str = "fp32", target: str | Target | None = None,
           verify_numerics: bool = False) -> CompileOptions:
        """The options of arguments already checked by onnxc.arguments: the thread count
        and the target resolved, the pipeline and shapes frozen."""
        from onnxc.runtime.threads import resolve_num_threads

        return cls(opt_level, _frozen_pipeline(pass_pipeline), resolve_num_threads(num_threads),
                   _frozen_shapes(input_shapes), precision, parse_target(target),
                   verify_numerics)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]] | None:
        """`input_shapes` as the mapping the importer takes."""
        return None if self.input_shapes is None else dict(self.input_shapes)

    def key_text(self) -> str:
        """The code-changing fields as canonical JSON (a pipeline given as names and the
        same passes given as text stay different: a miss at worst, never a wrong hit)."""
        return json.dumps({f.name: _canonical(f.name, getattr(self, f.name))
                           for f in dataclasses.fields(self) if f.metadata.get("key", True)},
                          sort_keys=True, default=repr)


def _frozen_pipeline(pipeline: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
    return pipeline if pipeline is None or isinstance(pipeline, str) else tuple(pipeline)


def _frozen_shapes(shapes: Mapping[str, Sequence[int]] | None) -> Shapes | None:
    if shapes is None:
        return None
    return tuple(sorted((str(name), tuple(int(d) if isinstance(d, numbers.Integral) else d
                                          for d in dims))
                        for name, dims in shapes.items()))


def _canonical(name: str, value: object) -> object:
    if isinstance(value, Target):
        return list(value.key())
    if name == "pass_pipeline" and isinstance(value, tuple):
        return ["list", *value]
    return value
