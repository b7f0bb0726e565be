"""The one list of onnxc's dialects and passes, as lazy factories.

`onnxc-opt`, `onnxc.compile` and the pipelines all look passes up here by their kebab-case
name, so a pass registered once is reachable everywhere. Factories import on first use to
keep start-up fast (the same scheme as `xdsl.transforms.get_all_passes`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass


def _lazy(path: str) -> Callable[[], type[ModulePass]]:
    module_name, _, attr = path.partition(":")

    def factory() -> type[ModulePass]:
        return getattr(importlib.import_module(module_name), attr)

    return factory


def _lazy_dialect(path: str) -> Callable[[], Dialect]:
    module_name, _, attr = path.partition(":")
    return lambda: getattr(importlib.import_module(module_name), attr)


ONNXC_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "graph": _lazy_dialect("onnxc.dialects.graph:Graph"),
    "llvmx": _lazy_dialect("onnxc.lowering.to_llvm.llvm_ext:LLVMX"),
}

# name -> "module:PassClass". Keep sorted by pipeline stage.
_PASS_PATHS: dict[str, str] = {
    # graph -> loops (scf/memref/arith/math over static memrefs)
    "convert-graph-to-loops": "onnxc.lowering.graph_to_loops.pass_:ConvertGraphToLoopsPass",
    # loops-level whole-program passes: the entry ABI
    "plan-memory": "onnxc.lowering.plan_memory:PlanMemoryPass",
    "bind-constants": "onnxc.lowering.bind_constants:BindConstantsPass",
    # loops -> llvm dialect
    "convert-arith-to-llvm": "onnxc.lowering.to_llvm.arith:ConvertArithToLLVMPass",
    "convert-math-to-llvm": "onnxc.lowering.to_llvm.math:ConvertMathToLLVMPass",
    "convert-memref-to-llvm": "onnxc.lowering.to_llvm.memref:ConvertMemRefToLLVMPass",
    "convert-cf-to-llvm": "onnxc.lowering.to_llvm.cf:ConvertCfToLLVMPass",
    "convert-func-to-llvm": "onnxc.lowering.to_llvm.func:ConvertFuncToLLVMPass",
    "emit-entry-wrapper": "onnxc.lowering.entry_wrapper:EmitEntryWrapperPass",
}

ONNXC_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    name: _lazy(path) for name, path in _PASS_PATHS.items()
}
