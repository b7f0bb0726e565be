"""`par.launch` as LLVM IR: a loop's iterations split into chunks run by onnxc's thread pool.

A launch of body function `@f(lo, hi, captured...)` becomes, at the launch site,

    ctx = alloca {lb, step, trips, chunks, @f.chunk, captured...}   ; in the entry block
    store @f.chunk and the captured values into ctx
    onnxc.parallel_launch(ctx, lb, ub, step, threads)

with one function per body, next to `@f`,

    internal void @f.chunk(i8* ctx, i64 lo, i64 hi)                ; f on [lo, hi)
      f(lo, hi, captured... loaded from ctx)

`onnxc.parallel_launch` is only declared here: it is the same for every model and lives in
the thread pool's module (lowering/to_llvm/launch_ir.py: the trip count, the serial test, the chunk
bounds), compiled once per process and linked into ahead-of-time artifacts with the pool.
What is per launch is only what differs (storing and loading the captured values): a
`.launch` and a `.chunk` of about 60 instructions per parallel loop were a fifth of a
model's LLVM IR (densenet121 has 245 parallel loops). `@f` keeps its signature, so its
`noalias` pointer arguments still tell LLVM that the captured buffers do not overlap.

`onnxc_pool_run` (runtime/thread_pool.py), which the launcher calls, returns when every
chunk has run, on the calling thread and up to n - 1 helpers; the caller claims chunks
itself and waits only for chunks a helper has started, so a helper the kernel has not
scheduled delays nothing. Chunks are claimed, not dealt out: a thread that starts late
(woken from sleep, or preempted by another process) takes fewer, where a static split would
make the others wait for its whole share; eight per thread bound the imbalance at the end
to ~1/16 of the loop, for one atomic operation per chunk. `@f` is `noinline`, so its loops
are compiled once rather than once per caller. The pool is loaded into the process (and
`onnxc.parallel_launch` exported) before such code is JIT-linked (runtime/jit.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from onnxc.lowering.to_llvm.launch_ir import HEADER, LAUNCH, LAUNCH_FN, RANGE_FN, VOID_PTR

I32 = ir.IntType(32)
I64 = ir.IntType(64)
_FN_FIELD = len(HEADER.elements) - 1


def _launcher(module: ir.Module) -> ir.Function:
    """The declaration of `@onnxc.parallel_launch(ctx, lb, ub, step, threads)`."""
    try:
        fn = module.get_global(LAUNCH)
    except KeyError:
        fn = ir.Function(module, LAUNCH_FN, name=LAUNCH)
        fn.attributes.add("nounwind")
    assert isinstance(fn, ir.Function)
    return fn


def _range_function(module: ir.Module, body: ir.Function,
                    ctx_type: ir.LiteralStructType) -> ir.Function:
    """`@<body>.chunk(ctx, lo, hi)`: the body on [lo, hi) with the captured values of `ctx`."""
    name = f"{body.name}.chunk"
    try:
        return module.get_global(name)  # type: ignore[return-value]
    except KeyError:
        pass
    fn = ir.Function(module, RANGE_FN, name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    body.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = b.bitcast(fn.args[0], ctx_type.as_pointer())
    first = len(HEADER.elements)
    captured = [b.load(b.gep(ctx, [I32(0), I32(first + i)], inbounds=True), typ=t)
                for i, t in enumerate(ctx_type.elements[first:])]
    b.call(body, [fn.args[1], fn.args[2], *captured])
    b.ret_void()
    return fn


def emit_launch(
    builder: ir.IRBuilder,
    callee: str,
    threads: int,
    bounds: Sequence[ir.Value],
    captured: Sequence[ir.Value],
) -> None:
    """Emit `par.launch @callee(bounds) captures(captured)` at `builder`'s position."""
    module = builder.module
    body = module.get_global(callee)
    assert isinstance(body, ir.Function)
    ctx_type = ir.LiteralStructType([*HEADER.elements, *(a.type for a in body.args[2:])])
    entry = builder.function.entry_basic_block
    if builder.block is entry:  # (a second builder there would shift this one's position)
        ctx = builder.alloca(ctx_type)
    else:  # a static slot, also for a launch inside a loop
        at_entry = ir.IRBuilder(entry)
        at_entry.position_at_start(entry)
        ctx = at_entry.alloca(ctx_type)
    # the header's last field (the body's `.chunk`), then the captured values after it
    fields = [_range_function(module, body, ctx_type), *captured]
    for i, value in enumerate(fields, start=_FN_FIELD):
        builder.store(value, builder.gep(ctx, [I32(0), I32(i)], inbounds=True))
    builder.call(_launcher(module), [builder.bitcast(ctx, VOID_PTR), *bounds, I64(threads)])
