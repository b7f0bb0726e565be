"""Ahead-of-time artifacts: a model compiled for a target into a directory that runs without
Python, and without compiling, where it is deployed.

    onnxc.compile_artifact("model.onnx", "out/", target="cortex-a76")
    onnxc compile model.onnx -o out/ --target cortex-a76

writes into `out/`:

- `model.so` (`<prefix>.so`): the model's native code (position-independent, for the
  target), the thread pool its parallel loops call, the C API of runtime/c/onnxc_model.c
  with the sizes of its shaped calls as generated C (runtime/artifact_sizes.py), and the
  weights, embedded (`.incbin`: the dynamic loader maps them from the file, nothing copies
  them). Only `<prefix>_*` symbols are exported, so two artifacts link into one program.
- `model.h` (`<prefix>.h`, runtime/artifact_header.py): that API, with the inputs' and
  outputs' names, shapes (symbolic ones by name), dtypes and byte sizes.
- `manifest.json`: the same description (and the constants' layout in the weights, the
  run-time check sites, the size symbols, the target and its features, the onnxc version)
  for `onnxc.load`.
- `run`: runtime/c/onnxc_run.c built for the target: `run IN_1 .. IN_n OUT_1 .. OUT_m` on raw
  little-endian C-order files (`FILE@2x3x8` gives an input's shape).

The code is exactly what `onnxc.compile` runs (the same stages, lower_to_llvm), emitted as
an object by LLVM for the target instead of loaded by the JIT; the C files are built with
the target's C compiler (`cc` for the host's architecture, `aarch64-linux-gnu-gcc` for
AArch64), a missing one being a ToolchainError that names the package to install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np

from onnxc.dialects.string_dtype import STRING_DTYPE
from onnxc.errors import CompilationError, InvalidArgumentError, ToolchainError
from onnxc.runtime import object_code
from onnxc.runtime.artifact_header import header_source
from onnxc.runtime.artifact_load import FORMAT, FORMAT_VERSION, MANIFEST
from onnxc.runtime.artifact_sizes import c_string, shape_symbols, sizes_source
from onnxc.runtime.cache_entry import aligned, tensor_layout
from onnxc.target import Target, host_target

RUN = "run"
SIZE_LIMIT = 1 << 40
"""The most bytes an artifact's dynamic arena or one output may take in a shaped call (the
input shapes come from the caller: sizes past it are an error status, not an allocation)."""
WEIGHTS_ALIGNMENT = aligned(1)
"""The weights blob's base alignment: the one tensor_layout aligns every tensor to."""

C_COMPILERS: dict[str, tuple[str, str]] = {
    "x86_64": ("x86_64-linux-gnu-gcc", "gcc-x86-64-linux-gnu"),
    "aarch64": ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu libc6-dev-arm64-cross"),
}
"""Per architecture: the cross C compiler and the Debian packages that provide it (the host's
own `cc` serves its architecture)."""


@dataclass(frozen=True)
class Artifact:
    """Where an artifact's files are."""

    directory: Path
    prefix: str

    @property
    def library(self) -> Path:
        """`<prefix>.so` (model.so by default): also its soname, so programs linking two
        artifacts need each by its own name."""
        return self.directory / f"{self.prefix}.so"

    @property
    def header(self) -> Path:
        return self.directory / f"{self.prefix}.h"

    @property
    def run(self) -> Path:
        return self.directory / RUN

    @property
    def manifest(self) -> Path:
        return self.directory / MANIFEST


def c_compiler(target: Target) -> str:
    """The C compiler that builds for `target`; ToolchainError naming the package if none."""
    candidates = []
    if target.arch == host_target().arch:
        candidates += [os.environ.get("CC", ""), "cc", "gcc"]
    cross, packages = C_COMPILERS.get(target.arch, (f"{target.arch}-linux-gnu-gcc", ""))
    candidates.append(cross)
    for name in candidates:
        if name and shutil.which(name):
            return name
    hint = f" (Debian: apt-get install {packages})" if packages else ""
    raise ToolchainError(f"no C compiler for {target.arch}: {cross} is not installed{hint}")


def _check_prefix(prefix: str) -> str:
    if not prefix.isidentifier() or not prefix.isascii():
        raise InvalidArgumentError(f"prefix must be a C identifier, got {prefix!r}")
    return prefix


def emit_object(lowered, target: Target, prefix: str) -> bytes:
    """The lowered model's LLVM module (plus the thread pool it calls) as a position-
    independent object for `target`, its entry wrapper named `<prefix>_entry`."""
    module, machine = optimized_module(lowered, target, prefix)
    return object_code.emit_object(module, machine)


def emit_assembly(lowered, target: Target, prefix: str = "model") -> str:
    """The same code as assembly text (LLVM marks each register spill and reload in it:
    benchmarks/spills.py counts them per kernel)."""
    module, machine = optimized_module(lowered, target, prefix)
    machine.set_asm_verbosity(True)
    with object_code.with_strength_reduction():
        return machine.emit_assembly(module)


def optimized_module(lowered, target: Target, prefix: str):
    """(the optimised LLVM module of the artifact's code, the target machine for it)."""
    from onnxc.dialects.entry_abi import WRAPPER_NAME
    from onnxc.runtime import thread_pool

    text = str(lowered.llvm_module)
    try:
        module = llvm.parse_assembly(text)
        module.verify()
        if thread_pool.LAUNCH in text:  # its parallel loops call the pool's launcher
            pool = llvm.parse_assembly(str(thread_pool.pool_ir(target)))
            module.link_in(pool)
    except RuntimeError as error:
        raise CompilationError(f"LLVM rejected the generated IR: {error}") from error
    module.get_function(WRAPPER_NAME).name = f"{prefix}_entry"
    machine = target.create_target_machine(reloc="pic")
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    object_code.optimize(module, machine, 3)
    return module, machine


def _weights(lowered) -> tuple[bytes, list[dict], list[dict]]:
    """The constants and the inputs' defaults as one blob, each at a 64-byte boundary, and
    their layout rows (name, shape, dtype, offset, nbytes)."""
    layout, arrays, end = tensor_layout(lowered.constant_names, lowered.constants,
                                        lowered.input_defaults, 0)
    blob = bytearray(end)
    rows = [*layout["constants"], *layout["defaults"]]
    for row, array in zip(rows, arrays):
        start = row["offset"]
        blob[start:start + row["nbytes"]] = memoryview(array.reshape(-1).view(np.uint8))
    return bytes(blob), layout["constants"], layout["defaults"]


def manifest_of(lowered, prefix: str, constants: list[dict], defaults: list[dict],
                 weights_bytes: int) -> dict:
    """manifest.json: the model's ABI record (runtime/model_abi.py, as a cache entry stores
    it) with the artifact's own fields beside it."""
    from onnxc.version import __version__

    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "onnxc": __version__,
        "prefix": prefix,
        **lowered.abi.to_json(),
        "constants": constants,
        "defaults": defaults,
        "weights_bytes": weights_bytes,
        "files": {"library": f"{prefix}.so", "header": f"{prefix}.h", "run": RUN},
    }
    manifest["shape_symbols"] = shape_symbols(manifest)
    return manifest


def _array(declaration: str, items: Sequence[str]) -> str:
    """`<declaration>[] = {items};` (one 0 when empty: C has no empty initializers)."""
    return f"{declaration}[] = {{{', '.join(items) or '0'}}};"


def _site_text(site: Mapping[str, object]) -> str:
    """A check site as the C API reports it (dialects/check_failures.py says more in Python)."""
    node = str(site.get("node", ""))
    where = (f"node '{node}'" if node else "an unnamed node") + f" ({site.get('op_type', '?')})"
    operand = site.get("operand", "?")
    if site.get("kind") == "divisor":
        return f"{where}: integer division by zero in divisor '{operand}'"
    if site.get("kind") == "size":
        return (f"{where}: the input sizes break a condition of the model: "
                f"{site.get('reason', site.get('guard', '?'))}")
    if site.get("kind") == "capacity":
        return f"{where}: size '{operand}'"
    ranges = site.get("ranges") or []
    allowed = f" [{ranges[0][0]}, {ranges[0][1]}]" if len(ranges) == 1 else ""
    return f"{where}: {operand} out of range{allowed}"


def layout_source(manifest: dict) -> str:
    """layout.c: the tables runtime/c/onnxc_model.c reads."""
    inputs = [row[0] for row in manifest["inputs"]]
    defaults = {row["name"]: row["offset"] for row in manifest["defaults"]}
    sites = [_site_text(site) for site in manifest["check_sites"]]
    lines = [
        "/* Generated by onnxc: the layout of this artifact's weights and arena. */",
        "#include <stdint.h>",
        f"const int64_t onnxc_num_inputs = {len(manifest['inputs'])};",
        f"const int64_t onnxc_num_outputs = {len(manifest['outputs'])};",
        f"const int64_t onnxc_num_constants = {len(manifest['constants'])};",
        _array("const int64_t onnxc_constant_offsets",
               [str(row["offset"]) for row in manifest["constants"]]),
        _array("const int64_t onnxc_default_offsets",
               [str(defaults.get(name, -1)) for name in inputs]),
        f"const int64_t onnxc_arena_bytes = {manifest['arena_bytes']};",
        f"const int64_t onnxc_status_offset = {manifest['status_offset']};",
        f"const int64_t onnxc_num_checks = {len(sites)};",
        _array("const char *const onnxc_check_sites", [c_string(s) for s in sites]),
        f"const char onnxc_manifest[] = {c_string(json.dumps(manifest, indent=1))};",
        "",
        sizes_source(manifest, SIZE_LIMIT),
    ]
    return "\n".join(lines)


def _assembly(prefix: str, weights: Path, arch: str) -> str:
    """weights.S: the weights blob embedded as `<prefix>_weights` in read-only data."""
    kind = "%object" if arch == "aarch64" else "@object"
    return "\n".join([
        '\t.section .rodata',
        f'\t.balign {WEIGHTS_ALIGNMENT}',
        f'\t.globl {prefix}_weights',
        f'\t.type {prefix}_weights, {kind}',
        f'{prefix}_weights:',
        f'\t.incbin "{weights}"',
        f'\t.size {prefix}_weights, .-{prefix}_weights',
        '\t.section .note.GNU-stack,"",%progbits',
        "",
    ])


def _run_compiler(args: list[str]) -> None:
    try:
        result = subprocess.run(args, capture_output=True, text=True, check=False)
    except OSError as error:
        raise ToolchainError(f"cannot run {args[0]}: {error}") from error
    if result.returncode != 0:
        raise CompilationError(f"{args[0]} failed:\n{result.stderr.strip()}")


def _c_source(name: str) -> str:
    return resources.files("onnxc.runtime").joinpath("c", name).read_text()


def _refuse_strings(abi) -> None:
    """The C API passes raw tensors of numbers: a string input or output (runtime/strings.py
    builds their {ptr, len} pairs, and checks what a run gives back) has no form in it."""
    for kind, specs in (("input", abi.inputs), ("output", abi.outputs)):
        for spec in specs:
            if spec.dtype == STRING_DTYPE:
                raise InvalidArgumentError(
                    f"model {kind} '{spec.name}' is a string tensor: an artifact's C API "
                    f"takes tensors of numbers only; run string models with onnxc.compile "
                    f"(docs/strings.md)")


def build(lowered, directory: str | os.PathLike, prefix: str = "model") -> Artifact:
    """Write the artifact of `lowered` (`Compilation.lower_to_llvm`) into `directory`."""
    prefix = _check_prefix(prefix)
    _refuse_strings(lowered.abi)
    target: Target = lowered.abi.target
    cc = c_compiler(target)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    obj = emit_object(lowered, target, prefix)
    blob, constants, defaults = _weights(lowered)
    manifest = manifest_of(lowered, prefix, constants, defaults, len(blob))
    symbolic = manifest["symbolic"] is not None
    artifact = Artifact(out, prefix)
    with tempfile.TemporaryDirectory(prefix="onnxc-artifact-") as tmp:
        work = Path(tmp)
        files = {
            "model.o": obj,
            "model.weights": blob,
            "weights.S": _assembly(prefix, work / "model.weights", target.arch).encode(),
            "layout.c": layout_source(manifest).encode(),
            "onnxc_model.c": _c_source("onnxc_model.c").encode(),
            "onnxc_run.c": _c_source("onnxc_run.c").encode(),
            "exports.map": f"{{ global: {prefix}_*; local: *; }};\n".encode(),
        }
        for name, data in files.items():
            (work / name).write_bytes(data)
        artifact.header.write_text(header_source(manifest))
        _run_compiler([
            cc, "-shared", "-fPIC", "-O2", "-std=gnu11", "-fvisibility=hidden",
            f"-DONNXC_PREFIX={prefix}", *(["-DONNXC_SYMBOLIC"] if symbolic else []),
            f"-Wl,-soname,{artifact.library.name}",
            "-o", str(artifact.library),
            str(work / "model.o"),
            str(work / "onnxc_model.c"), str(work / "layout.c"), str(work / "weights.S"),
            f"-Wl,--version-script={work / 'exports.map'}", "-Wl,-z,noexecstack",
            "-lpthread", "-lm"])
        _run_compiler([
            cc, "-O2", "-std=gnu11", f"-DONNXC_PREFIX={prefix}",
            *(["-DONNXC_SYMBOLIC"] if symbolic else []),
            f'-DONNXC_HEADER="{artifact.header.name}"', "-I", str(out), "-o", str(artifact.run),
            str(work / "onnxc_run.c"), str(artifact.library), "-Wl,-rpath,$ORIGIN"])
    artifact.manifest.write_text(json.dumps(manifest, indent=1) + "\n")
    return artifact


__all__ = ["Artifact", "build", "c_compiler", "emit_assembly", "emit_object", "header_source",
           "layout_source", "optimized_module"]
