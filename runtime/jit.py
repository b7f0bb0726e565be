"""The llvmlite JIT: LLVM IR -> verified, O3-optimised, vectorised native code in this process.

    native = NativeModule.from_llvm_ir(llvm_ir)         # parse, verify, optimise, MCJIT
                                                        # (a large module: in worker processes)
    fn = native.ctypes_function("main", None, c_void_p)  # holds `native` alive
    blob = native.object_code()                         # for a disk cache
    again = NativeModule.from_object(blob)              # reload without recompiling

llvmlite 0.50 rules this module follows: `llvm.initialize()` is gone (only the native target
and asm printer, and all targets for cross-compiling, are initialised once); MCJIT takes ownership of its TargetMachine, so each
engine gets a fresh one; invalid IR aborts the process inside MCJIT, so every module is
verified first and errors surface as `CompilationError`. A `NativeModule` owns its engine:
keep it alive as long as any function address from it is in use; nothing else refers to it
(no reference cycle), so the engine and its code are freed as soon as the last reference
goes. Code with parallel loops calls onnxc's thread pool (runtime/thread_pool.py), which is
loaded into the process before it is linked.

A large module (`PARALLEL_MIN_IR_BYTES` of IR text) is optimised and compiled in worker
processes, one part each, and its objects are linked into one engine
(runtime/parallel_codegen.py): on N cores LLVM's share of the compile shrinks about N-fold,
and an LLVM assertion kills a worker, not this process. Its `object_code()` is the objects
packed into one blob (`pack_objects`), which `from_object` loads the same way.

Optimisation and code generation themselves are runtime/object_code.py's. Memory:
llvmlite 0.50's `ModulePassManager` never frees its C++ pass pipeline (about 85 KB per
compile); `object_code.optimize` disposes it explicitly. What remains per compile is
llvmlite's PassInstrumentationCallbacks (about 1-2 KB, owned by no one in llvmlite's C++
layer).
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from onnxc.errors import CompilationError
from onnxc.runtime.object_code import emit_object, optimize, with_strength_reduction
from onnxc.runtime.parallel_codegen import (
    PARALLEL_MIN_IR_BYTES,
    CodegenPool,
    SpareWorkers,
    compile_parts,
    split_module,
)
from onnxc.target import Target, host_target, initialize_llvm


def _initialize_native() -> None:
    initialize_llvm()


def _load_runtimes(code: str | bytes) -> None:
    """Load onnxc's thread pool if `code` (IR text or an object) calls it (its
    `onnxc.parallel_launch`): MCJIT resolves external symbols against the libraries and
    symbols loaded into the process."""
    from onnxc.runtime import thread_pool

    marker = thread_pool.LAUNCH
    if (marker if isinstance(code, str) else marker.encode()) in code:
        try:
            thread_pool.load()
        except RuntimeError as error:
            raise CompilationError(str(error)) from error


def _check_object(data: bytes) -> None:
    """Reject bytes that are not a complete relocatable object: LLVM crashes on them."""
    if data[:4] == b"\x7fELF":
        if len(data) < 64 or data[4] != 2 or struct.unpack_from("<H", data, 16)[0] != 1:
            raise CompilationError("object code is not a 64-bit relocatable ELF file")
        (section_offset,) = struct.unpack_from("<Q", data, 40)
        entry_size, count = struct.unpack_from("<HH", data, 58)
        if section_offset + entry_size * count > len(data):
            raise CompilationError("object code is truncated")
    elif data[:4] != b"\xcf\xfa\xed\xfe" and data[:2] not in (b"\x64\x86", b"\x64\xaa"):
        raise CompilationError("object code is not an ELF, Mach-O or COFF object")


PACKED_MAGIC = b"ONNXCOBJ"
"""Starts the bytes of several objects packed into one blob (`pack_objects`)."""


def pack_objects(objects: list[bytes]) -> bytes:
    """Several relocatable objects as one blob (what the compile cache stores): the magic,
    the count and each size (little-endian u32, u64s), then the objects. One object is
    returned as it is."""
    if len(objects) == 1:
        return objects[0]
    sizes = struct.pack(f"<I{len(objects)}Q", len(objects), *map(len, objects))
    return PACKED_MAGIC + sizes + b"".join(objects)


def unpack_objects(data: bytes) -> list[bytes]:
    """The objects in a blob of `pack_objects`; CompilationError if it does not add up."""
    if not data.startswith(PACKED_MAGIC):
        return [data]
    at = len(PACKED_MAGIC)
    if len(data) < at + 4:
        raise CompilationError("packed object code is truncated")
    (count,) = struct.unpack_from("<I", data, at)
    at += 4
    if count == 0 or count > 1024 or len(data) < at + 8 * count:
        raise CompilationError("packed object code has a bad header")
    sizes = struct.unpack_from(f"<{count}Q", data, at)
    at += 8 * count
    if at + sum(sizes) != len(data):
        raise CompilationError("packed object code is truncated or has trailing bytes")
    objects = []
    for size in sizes:
        objects.append(data[at:at + size])
        at += size
    return objects


def codegen_jobs() -> int:
    """Worker processes for a large module's code generation: the CPUs this process may
    use, or ONNXC_CODEGEN_JOBS (1: everything in this process)."""
    configured = os.environ.get("ONNXC_CODEGEN_JOBS", "").strip()
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


class PendingNativeModule:
    """Machine code compiled from modules given to it one by one, while the caller emits
    the next (lowering/to_llvm/direct.py `emit_llvm_chunks`): LLVM's share of the compile
    then overlaps the emission of its IR. It compiles in `workers` processes and, with
    `in_process`, a thread of this process (runtime/parallel_codegen.py CodegenPool); the
    `spare` workers started ahead are used first."""

    def __init__(self, target: Target, workers: int, opt_level: int = 3, *,
                 in_process: bool = False, spare: SpareWorkers | None = None):
        self.target = target
        self.workers = workers
        self.in_process = in_process
        self._pool = CodegenPool(target, opt_level, workers, in_process=in_process,
                                 spare=spare)

    def submit(self, llvm_ir: str, strength_reduction: bool = True) -> None:
        self._pool.submit(llvm_ir, strength_reduction)

    def finish(self) -> NativeModule:
        """Wait for the workers and link their objects into one engine."""
        return NativeModule.from_object(pack_objects(self._pool.finish()), target=self.target)

    def abort(self) -> None:
        self._pool.abort()


class NativeModule:
    """Native code for one LLVM module, loaded into this process by MCJIT."""

    def __init__(
        self,
        engine: llvm.ExecutionEngine,
        machine: llvm.TargetMachine,
        module: llvm.ModuleRef | None,
    ):
        self._engine = engine
        self._machine = machine  # owned by the engine; referenced so it outlives nothing
        self._module = module
        self._object: bytes | None = None

    @classmethod
    def from_llvm_ir(
        cls,
        llvm_ir: str | ir.Module,
        *,
        target: Target | None = None,
        opt_level: int = 3,
        runtimes: bool = True,
    ) -> NativeModule:
        """Parse, verify, optimise and JIT-compile `llvm_ir` (text or an llvmlite module).
        `runtimes=False`: it is itself the runtime (the thread pool, which defines the
        launcher model code calls), loaded without looking for the ones it calls."""
        _initialize_native()
        target = target or host_target()
        text = str(llvm_ir)
        if runtimes:
            _load_runtimes(text)
        jobs = codegen_jobs()
        if jobs > 1 and len(text) >= PARALLEL_MIN_IR_BYTES:
            objects = compile_parts(split_module(text, jobs), target, opt_level)
            return cls.from_object(pack_objects(objects), target=target)
        try:
            module = llvm.parse_assembly(text)
            module.verify()
        except RuntimeError as error:
            raise CompilationError(f"LLVM rejected the generated IR: {error}") from error
        machine = target.create_target_machine(opt_level)
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        optimize(module, machine, opt_level)
        engine = llvm.create_mcjit_compiler(module, machine)
        objects: list[bytes] = []  # not `native`: the engine must not keep it alive
        engine.set_object_cache(notify_func=lambda _module, buffer: objects.append(bytes(buffer)))
        with with_strength_reduction():
            engine.finalize_object()
        native = cls(engine, machine, module)
        native._object = objects[0] if objects else None
        return native

    @classmethod
    def from_object(cls, object_code: bytes, *, target: Target | None = None) -> NativeModule:
        """Load object code from `object_code()` (of this target) without recompiling: one
        object, or several packed by `pack_objects` (linked into one engine)."""
        _initialize_native()
        objects = unpack_objects(object_code)
        for part in objects:
            _check_object(part)
        _load_runtimes(object_code)
        target = target or host_target()
        machine = target.create_target_machine()
        empty = llvm.parse_assembly("")
        empty.triple = machine.triple
        empty.data_layout = str(machine.target_data)
        engine = llvm.create_mcjit_compiler(empty, machine)
        try:
            for part in objects:
                engine.add_object_file(llvm.ObjectFileRef.from_data(part))
        except RuntimeError as error:
            raise CompilationError(f"cannot load object code: {error}") from error
        engine.finalize_object()
        native = cls(engine, machine, None)
        native._object = bytes(object_code)
        return native

    def function_address(self, name: str) -> int:
        """The address of the function `name` (an external symbol of the module)."""
        address = self._engine.get_function_address(name)
        if not address:
            raise KeyError(f"no function @{name} in the compiled module")
        return address

    def ctypes_function(
        self, name: str, restype: type | None, *argtypes: type
    ) -> Callable[..., Any]:
        """`name` as a ctypes function that keeps this module (its code) alive while it lives."""
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(self.function_address(name))
        fn.native_module = self  # type: ignore[attr-defined]
        return fn

    def object_code(self) -> bytes:
        """The relocatable object MCJIT compiled, loadable by `from_object`."""
        if self._object is None:
            assert self._module is not None
            self._object = emit_object(self._module, self._machine)
        return self._object

    def optimized_ir(self) -> str:
        """The module's LLVM IR after optimisation, for debugging."""
        if self._module is None:
            raise ValueError("a NativeModule loaded from object code has no IR")
        return str(self._module)
