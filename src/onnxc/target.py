"""What code is compiled for: a `Target` (triple, CPU, features, vector registers) and presets.

A compile's target is an attribute of the module it lowers (`onnxc.target`, set by
`set_module_target`; onnxc-opt's --compile-target sets it on a module without one). A pass
whose work depends on the machine reads it from the module it runs on (`target_of`: the
attribute, else this process's host), and hands it on explicitly: convert-graph-to-loops
gives it to every `KernelBuilder` and to the kernel rules' hooks, so every kernel decision
that depends on the machine (vector width, tile sizes from the register file, the int8 and
bf16 instructions) reads it from its arguments, never from ambient state. The target is
part of the compile cache's key, so code built for one CPU is never loaded for another.

A target is written `host`, a preset name (`PRESETS`: x86-64-v2/v3/v4; aarch64,
cortex-a76, neoverse-n1, neoverse-v1 and their `+dotprod` / `+sve` variants), or
`TRIPLE[:CPU[:FEATURES]]` with LLVM's names (`x86_64-unknown-linux-gnu:haswell`,
`aarch64-unknown-linux-gnu:cortex-a76:+neon,+dotprod`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, fields, replace
from types import ModuleType
from typing import TYPE_CHECKING

from onnxc.errors import InvalidArgumentError

if TYPE_CHECKING:  # imported where used: loading an artifact needs no xDSL, parsing no LLVM
    from llvmlite import binding as llvm
    from xdsl.dialects.builtin import ModuleOp

X86_64 = "x86_64-unknown-linux-gnu"
AARCH64 = "aarch64-unknown-linux-gnu"

_X86_V2 = ("cx16", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3")
_X86_V3 = (*_X86_V2, "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_X86_V4 = (*_X86_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_NEON = ("neon", "fp-armv8")


@dataclass(frozen=True)
class Target:
    """A machine to compile for, in LLVM's terms, with what the kernels derive from it."""

    name: str
    """How the user named it (`host`, a preset, or the TRIPLE:CPU:FEATURES spec)."""
    triple: str
    cpu: str
    features: str
    """LLVM feature string, e.g. `+avx2,+fma,-avx512f`."""
    blocking: str = ""
    """The packed GEMM's k-block depth and N-stripe width, `KCxNC` (`256x512`), measured for
    this CPU (runtime/gemm_tuning.py); "" for the defaults (gemm_tiles.KC x NC)."""

    def has_feature(self, feature: str) -> bool:
        return f"+{feature}" in self.features.split(",")

    @property
    def arch(self) -> str:
        return self.triple.split("-", 1)[0]

    @property
    def vector_bits(self) -> int:
        """Widest SIMD register: 512 with AVX-512F, 256 with AVX, 128 with SSE or NEON."""
        if self.arch == "x86_64":
            if self.has_feature("avx512f"):
                return 512
            return 256 if self.has_feature("avx") else 128
        return 128

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers: 32 with AVX-512 or on AArch64, else 16."""
        if self.arch == "x86_64":
            return 32 if self.has_feature("avx512f") else 16
        return 32

    @property
    def data_layout(self) -> str:
        return _data_layout(self.triple, self.cpu, self.features)

    def create_target_machine(self, opt_level: int = 3,
                              reloc: str = "default") -> llvm.TargetMachine:
        """A new TargetMachine: MCJIT takes ownership, so one must never serve two engines.
        `reloc="pic"` for code that goes into a shared library."""
        llvm = initialize_llvm()
        return llvm.Target.from_triple(self.triple).create_target_machine(
            cpu=self.cpu, features=self.features, opt=opt_level, reloc=reloc)

    def key(self) -> tuple[str, ...]:
        """What the generated code depends on (for the compile cache)."""
        return (self.triple, self.cpu, self.features, *((self.blocking,) if self.blocking else ()))

    def missing_on(self, host: Target) -> list[str]:
        """Why code for this target cannot run on `host`: another architecture, or the
        features it uses that the host lacks. Empty: it runs."""
        if self.arch != host.arch:
            return [f"it is {self.arch} code and this machine is {host.arch}"]
        used = [f[1:] for f in self.features.split(",") if f.startswith("+")]
        return [f for f in used if not host.has_feature(f)]

    def why_it_cannot_run_on(self, host: Target) -> str | None:
        """`missing_on` as one sentence for an error message; None when it runs."""
        missing = self.missing_on(host)
        if not missing:
            return None
        if self.arch != host.arch:
            return "; ".join(missing)
        return f"this CPU ({host.cpu}) lacks {', '.join(missing)}"


def _preset(name: str, triple: str, cpu: str, features: tuple[str, ...]) -> Target:
    return Target(name, triple, cpu, ",".join(f"+{f}" for f in features))


PRESETS: dict[str, Target] = {t.name: t for t in (
    _preset("x86-64-v2", X86_64, "x86-64-v2", _X86_V2),
    _preset("x86-64-v3", X86_64, "x86-64-v3", _X86_V3),
    _preset("x86-64-v4", X86_64, "x86-64-v4", _X86_V4),
    _preset("aarch64", AARCH64, "generic", _NEON),
    _preset("cortex-a76", AARCH64, "cortex-a76", (*_NEON, "dotprod", "fullfp16", "rcpc")),
    _preset("neoverse-n1", AARCH64, "neoverse-n1", (*_NEON, "dotprod", "fullfp16", "rcpc")),
    _preset("neoverse-v1", AARCH64, "neoverse-v1",
            (*_NEON, "dotprod", "fullfp16", "rcpc", "bf16", "i8mm", "sve")),
)}
"""Named targets; an aarch64 preset plus `+dotprod` / `+sve` (e.g. `aarch64+dotprod`) adds
that feature, `-sve` (e.g. `neoverse-v1-sve`) removes it."""


CPU_FEATURES: dict[str, tuple[str, ...]] = {
    **{cpu: _X86_V3 for cpu in ("haswell", "broadwell", "skylake", "znver1", "znver2",
                                "znver3", "alderlake")},
    "skylake-avx512": _X86_V4,
    **{cpu: (*_X86_V4, "avx512vnni") for cpu in ("cascadelake", "icelake-server",
                                                  "icelake-client", "tigerlake")},
    **{cpu: (*_X86_V4, "avx512vnni", "avx512bf16") for cpu in ("cooperlake",
                                                              "sapphirerapids", "znver4",
                                                              "znver5")},
    **{t.cpu: tuple(f[1:] for f in t.features.split(",")) for t in PRESETS.values()},
}
"""Features a TRIPLE:CPU spec without FEATURES gets (llvmlite cannot ask LLVM for a CPU's
defaults); another CPU without features gets none, the baseline of its architecture."""


@functools.cache
def initialize_llvm() -> ModuleType:
    """LLVM's bindings with every target initialized. Imported here, on first use: a
    parse-and-rewrite `onnxc-opt` run needs no LLVM (about 0.1 s of each of its starts)."""
    from llvmlite import binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


@functools.cache
def _data_layout(triple: str, cpu: str, features: str) -> str:
    llvm = initialize_llvm()
    machine = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features)
    return str(machine.target_data)


@functools.cache
def host_target() -> Target:
    """This machine: LLVM's host CPU name and features."""
    llvm = initialize_llvm()
    return Target("host", llvm.get_process_triple(), llvm.get_host_cpu_name(),
                  llvm.get_host_cpu_features().flatten())


def _with_suffixes(spec: str) -> Target | None:
    """A preset with `+feature` / `-feature` suffixes (`neoverse-v1-sve`, `aarch64+dotprod`)."""
    for name in sorted(PRESETS, key=len, reverse=True):
        rest = spec[len(name):]
        if not spec.startswith(name) or not rest:
            continue
        parts = re.findall(r"([+-])([A-Za-z0-9._]+)", rest)
        if "".join(sign + feature for sign, feature in parts) != rest:
            continue
        features = PRESETS[name].features.split(",")
        for sign, feature in parts:
            features = [f for f in features if f[1:] != feature]
            if sign == "+":
                features.append(f"+{feature}")
        return replace(PRESETS[name], name=spec, features=",".join(features))
    return None


def _check_triple(triple: str, what: str) -> None:
    """InvalidArgumentError, naming `what`, when LLVM has no target for `triple`."""
    llvm = initialize_llvm()
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError as error:
        raise InvalidArgumentError(f"{what}: LLVM has no target for triple {triple!r} "
                                   f"({error})") from None


def parse_target(spec: str | Target | None) -> Target:
    """`host`, a preset (with optional +/- feature suffixes) or TRIPLE[:CPU[:FEATURES]];
    InvalidArgumentError naming the spec when LLVM does not know it."""
    if spec is None or isinstance(spec, Target):
        return spec or host_target()
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgumentError(f"target must be a target name or TRIPLE[:CPU[:FEATURES]], "
                                   f"got {spec!r}")
    spec = spec.strip()
    if spec == "host":
        return host_target()
    if spec in PRESETS:
        return PRESETS[spec]
    if (suffixed := _with_suffixes(spec)) is not None:
        return suffixed
    triple, _, rest = spec.partition(":")
    cpu, _, features = rest.partition(":")
    if "-" not in triple:
        raise InvalidArgumentError(
            f"unknown target {spec!r}: expected host, one of {', '.join(PRESETS)}, or "
            f"TRIPLE[:CPU[:FEATURES]]")
    _check_triple(triple, f"target {spec!r}")
    if features and not all(f[:1] in "+-" and len(f) > 1 for f in features.split(",")):
        raise InvalidArgumentError(f"target {spec!r}: features must be +name or -name, "
                                   f"comma-separated")
    if not features and cpu in CPU_FEATURES:
        features = ",".join(f"+{f}" for f in CPU_FEATURES[cpu])
    return Target(spec, triple, cpu or "generic", features)


TARGET_ATTR = "onnxc.target"
"""The module attribute naming the target: {name, triple, cpu, features} as strings."""
TARGET_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Target))
"""What describes a target (name, triple, cpu, features, blocking): the module attribute's
and a stored ModelABI's keys (`blocking` may be absent: IR and artifacts from before it)."""
OPTIONAL_FIELDS = {"blocking": ""}


def set_module_target(module: ModuleOp, target: Target) -> None:
    """Record `target` on `module`: what its passes build for (`target_of`)."""
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr

    module.attributes[TARGET_ATTR] = DictionaryAttr(
        {field: StringAttr(getattr(target, field)) for field in TARGET_FIELDS
         if getattr(target, field) != OPTIONAL_FIELDS.get(field)})  # "" blocking: left out


def module_target(module: ModuleOp) -> Target | None:
    """The target `module` records, None without one; InvalidArgumentError for an attribute
    that is not {name, triple, cpu, features} strings or names a triple LLVM lacks."""
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr

    attr = module.attributes.get(TARGET_ATTR)
    if attr is None:
        return None
    given = dict(attr.data) if isinstance(attr, DictionaryAttr) else {}
    for name, default in OPTIONAL_FIELDS.items():
        given.setdefault(name, StringAttr(default))
    if set(given) != set(TARGET_FIELDS) or not all(
            isinstance(given[name], StringAttr) for name in TARGET_FIELDS):
        raise InvalidArgumentError(
            f"module attribute {TARGET_ATTR} must be a dictionary of the strings "
            f"{', '.join(TARGET_FIELDS)}, got {attr}")
    return _recorded(*(given[name].data for name in TARGET_FIELDS))  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=64)
def _recorded(name: str, triple: str, cpu: str, features: str, blocking: str) -> Target:
    """A recorded target, checked once: its triple must be one LLVM has."""
    _check_triple(triple, f"module attribute {TARGET_ATTR}")
    target = Target(name, triple, cpu, features, blocking)
    return host_target() if target == host_target() else target


def target_of(module: ModuleOp) -> Target:
    """What `module`'s passes build for: the target it records (`module_target`), else this
    process's host."""
    return module_target(module) or host_target()
