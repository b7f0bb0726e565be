"""Run an ahead-of-time artifact's `run` program on numpy inputs, natively or under qemu-user.

AArch64 artifacts run under `qemu-aarch64 -cpu <the target's CPU> -L /usr/aarch64-linux-gnu`
(Debian's qemu-user and libc6-dev-arm64-cross), x86-64 artifacts built for another CPU
under `qemu-x86_64 -cpu <model>` so that an instruction the CPU lacks is a SIGILL, not a
silent pass (natively on a host without AVX-512 that has the CPU's features, where that holds
as well). `emulator(target)` is None when the tools are missing (the tests skip).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np

from onnxc.runtime.dtypes import dtype_named

QEMU_CPU = {"cortex-a76": "cortex-a76", "neoverse-n1": "neoverse-n1", "neoverse-v1": "max",
            "generic": "cortex-a53", "x86-64-v3": "Haswell", "x86-64-v2": "Nehalem"}
"""qemu's CPU model for a target CPU (one with no more features than the target's)."""


def emulator(arch: str, cpu: str) -> list[str] | None:
    """The command prefix that runs code for (arch, cpu) here: [] natively, a qemu command,
    or None when it cannot be run (qemu or the target's libraries missing)."""
    import platform

    if arch == platform.machine() and (cpu not in QEMU_CPU or _native_is_as_strict(cpu)):
        return []
    qemu = shutil.which(f"qemu-{arch}")
    if qemu is None:
        return None
    command = [qemu, "-cpu", QEMU_CPU.get(cpu, "max")]
    if arch != platform.machine():
        sysroot = Path(f"/usr/{arch}-linux-gnu")
        if not sysroot.is_dir():
            return None
        command += ["-L", str(sysroot)]
    return command


def _native_is_as_strict(cpu: str) -> bool:
    """Whether running code for x86 `cpu` on this host tests as much as qemu would: the
    host has every feature the CPU has, and exactly its vector instruction sets (AVX, AVX2,
    FMA, AVX-512F), so a wider instruction than the CPU allows is a SIGILL here too. An AVX2
    host without AVX-512 runs x86-64-v3 artifacts natively, far faster than qemu's AVX2
    translation."""
    from onnxc.target import CPU_FEATURES, host_target

    host = host_target()
    wanted = CPU_FEATURES.get(cpu)
    if wanted is None or host.arch != "x86_64":
        return False
    same_vectors = all(host.has_feature(f) == (f in wanted)
                       for f in ("avx", "avx2", "fma", "avx512f"))
    return same_vectors and all(host.has_feature(f) for f in wanted)


def skip_unless_runnable(spec: str) -> None:
    """pytest.skip unless artifacts for target `spec` can be built (the target's C
    compiler) and run here (natively or under qemu-user)."""
    import pytest

    from onnxc.errors import ToolchainError
    from onnxc.runtime import artifact
    from onnxc.target import parse_target

    target = parse_target(spec)
    if emulator(target.arch, target.cpu) is None:
        pytest.skip(f"qemu-user for {target.arch} is not installed")
    try:
        artifact.c_compiler(target)
    except ToolchainError as error:
        pytest.skip(str(error))


def run_artifact(directory, inputs, timeout: float = 600) -> list[np.ndarray]:
    """The outputs of the artifact's `run` on `inputs`: arrays in model order, or a mapping
    of input name to array (an input with a default may be left out). A symbolic model's
    inputs (or inputs of another shape than the manifest's: a batch) go with their shapes,
    `FILE@2x3`, and its outputs come back in the shapes `run` prints."""
    directory = Path(directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    target = manifest["target"]
    prefix = emulator(target["triple"].split("-")[0], target["cpu"])
    assert prefix is not None, "no way to run this artifact here"
    if isinstance(inputs, dict):
        inputs = [inputs.get(name) for name, _, _ in manifest["inputs"]]
    shaped = manifest.get("symbolic") is not None or any(
        array is not None and list(np.shape(array)) != shape
        for array, (_, shape, _) in zip(inputs, manifest["inputs"]))
    in_files, out_files = [], []
    for i, array in enumerate(inputs):
        if array is None:
            in_files.append("-")  # the input's default
            continue
        path = directory / f"in{i}.bin"
        np.ascontiguousarray(array).tofile(path)
        in_files.append(f"{path}@{'x'.join(map(str, np.shape(array)))}" if shaped else str(path))
    for i in range(len(manifest["outputs"])):
        out_files.append(str(directory / f"out{i}.bin"))
    result = subprocess.run([*prefix, str(directory / "run"), *in_files, *out_files],
                            capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"run exited with {result.returncode}: {result.stderr.strip()}")
    shapes = [shape for _, shape, _ in manifest["outputs"]]
    if shaped:  # "name: 2x3" per output, in order
        printed = result.stdout.splitlines()[-len(shapes):] if shapes else []
        shapes = [[int(d) for d in line.rpartition(": ")[2].split("x") if d]
                  for line in printed]
    return [np.fromfile(path, dtype_named(dtype)).reshape(shape)
            for path, shape, (_, _, dtype) in zip(out_files, shapes, manifest["outputs"])]
