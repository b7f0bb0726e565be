"""Loops level -> xDSL `llvm` dialect -> llvmlite IR.

xDSL 0.74 has no `convert-{arith,math,memref,cf,func}-to-llvm`, so these are ours, one module
per source dialect, and `translate.py` turns the result into an `llvmlite.ir.Module`.

Type conversion scheme (type_conversion.py): `index` is `i64` and a memref is a bare
`!llvm.ptr` to its base element, with shape, strides and offset static in its type. Each pass
converts only its own ops; where a converted value meets a not-yet-converted user (or the
reverse) it inserts a `builtin.unrealized_conversion_cast`, so every pass runs alone on its
own input, in any order. Converting a branch converts its destination blocks' argument types
and converting a function its entry block's; `reconcile-unrealized-casts` then removes the
A -> B -> A cast chains that remain once every pass has run.

The three LLVM casts xDSL's `llvm` dialect lacks (`fptosi`, `fptoui`, `uitofp`) are the ops
of our small `llvmx` dialect (llvm_ext.py); intrinsics xDSL has no op for are
`llvm.call_intrinsic` with the type-mangled name, and libm functions (`erff`) are external
`llvm.func` declarations. `translate.to_llvmlite` emits all of them.

`onnxc.compile` skips the llvm dialect: direct.py emits llvmlite IR straight from the loops,
using the same type conversion and, for every op it does not emit itself, that op's pattern
from these modules (xDSL's rewriting was 7-10 s of a ResNet-50 compile). The passes remain
what `onnxc-opt --emit=llvm-dialect|llvm-ir|asm|obj` and the lit tests run.

The order these passes run in is a stage of the compile: onnxc.pipeline
(LOOPS_TO_LLVM_PIPELINE, lower_to_llvm_dialect; lower_loops_to_llvm for bare loops modules).
"""
