"""Refresh the snapshot of onnxruntime's CPU kernels that docs/onnxruntime-coverage.md is
generated from (src/onnxc/tools/data/onnxruntime_cpu_kernels.json), from the installed
onnxruntime (the registry its own docs/OperatorKernels.md is generated from). onnxruntime is
a reference here, never imported by onnxc itself.

    python benchmarks/onnxruntime_kernels.py
    python -m onnxc.tools.onnxruntime_coverage -o docs/onnxruntime-coverage.md
"""

from __future__ import annotations

import json

import onnxruntime
from onnxruntime.capi import _pybind_state

from onnxc.tools.onnxruntime_coverage import SNAPSHOT


def snapshot() -> dict:
    """{"onnxruntime": version, "kernels": [[domain, op, [[first, last], ...]], ...]} of the
    CPU execution provider (last is 2**31 - 1 when open)."""
    ranges: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for kernel in _pybind_state.get_all_opkernel_def():
        if kernel.provider == "CPUExecutionProvider":
            ranges.setdefault((kernel.domain, kernel.op_name), set()).add(
                tuple(kernel.version_range))
    kernels = [[d, op, sorted(map(list, r))] for (d, op), r in sorted(ranges.items())]
    return {"onnxruntime": onnxruntime.__version__, "kernels": kernels}


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=0) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
