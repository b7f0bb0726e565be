"""Helpers for writing graph-dialect IR in tests: types, constants, conv properties, modules;
and for running loop-level IR as native code (`jit_loops`).

Pass tests build small graphs as text (the same syntax lit tests use) with random constants;
these helpers keep that text consistent and parse it with every onnxc dialect loaded.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

_CONV = ("{strides = array<i64: %s>, pads = array<i64: %s>, dilations = array<i64: 1, 1>, "
         "group = %d : i64}")


def tensor(shape) -> str:
    """`tensor<AxBxf32>` for a shape."""
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def const(name: str, array: np.ndarray) -> str:
    """A graph.constant line holding `array` (float32, printed with a decimal point)."""
    def nested(a):
        if a.ndim == 0:
            return f"{float(a):.8e}"
        return "[" + ", ".join(nested(x) for x in a) + "]"

    t = tensor(array.shape)
    return f"  %{name} = graph.constant {{value = dense<{nested(np.asarray(array))}> : {t}}} : {t}"


def conv_props(strides=(1, 1), pads=(0, 0, 0, 0), group=1) -> str:
    """The property dictionary of a 2-D graph.conv."""
    return _CONV % (", ".join(map(str, strides)), ", ".join(map(str, pads)), group)


def parse_graph(text: str) -> ModuleOp:
    """Parse IR text with every xDSL and onnxc dialect available."""
    from onnxc.pipeline import make_context

    return Parser(make_context(), text).parse_module()


def module(args: dict[str, tuple], body: list[str], results: list[tuple[str, tuple]]) -> ModuleOp:
    """`func.func @main(args) -> results { body; return }` parsed into a module."""
    sig = ", ".join(f"%{n}: {tensor(s)}" for n, s in args.items())
    outs = ", ".join(tensor(s) for _, s in results)
    text = (f"func.func @main({sig}) -> ({outs}) {{\n" + "\n".join(body) + "\n"
            f"  func.return {', '.join('%' + n for n, _ in results)} : {outs}\n}}\n")
    return parse_graph(text)


def rand(rng: np.random.Generator, *shape, low=-1.0, high=1.0) -> np.ndarray:
    """Uniform float32 values in [low, high)."""
    return rng.uniform(low, high, shape).astype(np.float32)


def split_lit_cases(path) -> list[str]:
    """The `// -----` chunks of a lit test file that define a function."""
    from pathlib import Path

    return [c for c in Path(path).read_text().split("// -----") if "func.func" in c]


def imported_ops(onnx_text: str, opset: int) -> list:
    """The ops of @main (without the return) of a model given in ONNX's text syntax."""
    from xdsl.dialects.func import FuncOp

    from onnxc.frontend import import_onnx_text

    module = import_onnx_text(f'<ir_version: 10, opset_import: ["" : {opset}]>\n{onnx_text}')
    module.verify()
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return list(func.body.block.ops)[:-1]


def jit_loops(text: str, num_threads: int = 1, route: str = "direct"):
    """Loop-level IR text (func/scf/memref/arith, `onnxc.parallel` loops) lowered to LLVM for
    this host with `num_threads` and JIT-compiled: (NativeModule, its LLVM IR text).

    `route="direct"` emits LLVM IR straight from the loops, as `onnxc.compile` does
    (lowering/to_llvm/direct.py); `route="patterns"` goes through the llvm dialect, as
    `onnxc-opt --emit=llvm-dialect` does. Every marked loop is launched, however small
    (the work threshold off: these tests are about the launch)."""
    from onnxc.pipeline import make_context
    from onnxc.runtime.jit import host_target

    from onnxc.lowering.to_llvm import parallel

    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    target = host_target()
    saved, parallel.MIN_PARALLEL_OPS = parallel.MIN_PARALLEL_OPS, 0  # small loops launch too
    try:
        return _jit_loops(ctx, module, target, num_threads, route)
    finally:
        parallel.MIN_PARALLEL_OPS = saved


def _jit_loops(ctx, module, target, num_threads: int, route: str):
    from onnxc.lowering.to_llvm.direct import emit_llvm_ir
    from onnxc.lowering.to_llvm.parallel import OutlineParallelLoopsPass
    from onnxc.pipeline import lower_loops_to_llvm, translate_to_llvm_ir
    from onnxc.runtime.jit import NativeModule

    if route == "direct":
        module.verify()
        OutlineParallelLoopsPass(num_threads=num_threads).apply(ctx, module)
        llvm_ir = str(emit_llvm_ir(module, triple=target.triple, data_layout=target.data_layout))
    else:
        lower_loops_to_llvm(ctx, module, num_threads=num_threads)
        llvm_ir = str(translate_to_llvm_ir(module, target))
    return NativeModule.from_llvm_ir(llvm_ir), llvm_ir


def compile_graph(text: str, num_threads: int = 1):
    """Graph-dialect IR text compiled like `onnxc.compile` compiles an imported model (no
    graph passes): the CompiledModel, whose inputs are @main's arguments in order."""
    return _compile_graph(text, num_threads)[0]


def compile_graph_cold_and_warm(text: str, cache_dir, num_threads: int = 1):
    """`compile_graph` (cold), then stored in a disk cache at `cache_dir` and loaded back
    from it (warm, as a cache hit is): both CompiledModels."""
    import hashlib

    from onnxc.dialects.entry_abi import WRAPPER_NAME
    from onnxc.runtime import cache

    cold, native, lowered = _compile_graph(text, num_threads)
    disk = cache.open_cache(cache_dir)
    key = hashlib.sha256(text.encode()).hexdigest()
    assert disk.store(key, cold, native.object_code(), lowered.constant_names, WRAPPER_NAME)
    warm = disk.load(key)
    assert warm is not None and warm.symbolic == cold.symbolic
    return cold, warm


def _compile_graph(text: str, num_threads: int):
    from onnxc import pipeline
    from onnxc.compilation import Compilation
    from onnxc.compile_options import CompileOptions
    from onnxc.dialects.entry_abi import WRAPPER_NAME
    from onnxc.runtime.compiled_model import CompiledModel
    from onnxc.target import parse_target

    module = parse_graph(text)
    target = parse_target("host")
    lowered = Compilation(CompileOptions(num_threads=num_threads, target=target)).lower(module)
    native = pipeline.jit_compile(lowered.llvm_module, target)
    model = CompiledModel(native, native.function_address(WRAPPER_NAME), lowered.abi,
                          lowered.constants, lowered.input_defaults)
    return model, native, lowered
