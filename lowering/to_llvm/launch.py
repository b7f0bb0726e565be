"""`par.launch` as LLVM IR: a loop's iterations split into chunks run by onnxc's thread pool.

For a launch of body function `@f(lo, hi, captured...)` this emits, next to `@f`:

    internal void @f.launch(i64 lb, i64 ub, i64 step, captured...)
      trips = ceil((ub - lb) / step); n = min(trips, threads)
      n < 2 or forked:  f(lb, ub, captured...)             ; no parallel region
      else:   ctx = alloca {lb, step, trips, chunks = min(trips, 8 n), captured...}
              onnxc_parallel_run(@f.chunk, ctx, chunks, n)
    internal void @f.chunk(i8* ctx, i64 c)                 ; chunk c of 0..trips
      f(lb + c * trips / chunks * step, lb + (c + 1) * trips / chunks * step, captured...)

and the launch site becomes one call of `@f.launch` (which LLVM inlines).
`onnxc_parallel_run` (runtime/thread_pool.py) returns when every chunk has run, on the
calling thread and up to n - 1 helpers; the caller claims chunks itself and waits only for
chunks a helper has started, so a helper the kernel has not scheduled delays nothing.
Chunks are claimed, not dealt out: a thread that starts late (woken from sleep, or
preempted by another process) takes fewer, where a static split would make the others wait
for its whole share; eight per thread bound the imbalance at the end to ~1/16 of the loop,
for one atomic operation per chunk. `@f` is `noinline`, so its loops are compiled once
rather than once per caller. The pool is loaded into the process (and its symbols exported)
before such code is JIT-linked (runtime/jit.py).

`forked` is the process-wide flag `@onnxc_serial_after_fork`, set in a child after fork():
the pool's helper threads do not survive fork, so the child runs its loops serially.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from onnxc.runtime.thread_pool import CHUNK_FN, FORK_FLAG, MAX_CHUNKS, PARALLEL_RUN

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID_PTR = ir.IntType(8).as_pointer()
CHUNKS_PER_THREAD = 8


def _declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    try:
        fn = module.get_global(name)
    except KeyError:
        fn = ir.Function(module, fnty, name=name)
    assert isinstance(fn, ir.Function)
    return fn


def _fork_flag(module: ir.Module) -> ir.GlobalVariable:
    try:
        flag = module.get_global(FORK_FLAG)
    except KeyError:
        flag = ir.GlobalVariable(module, I32, name=FORK_FLAG)  # external: the pool's
    assert isinstance(flag, ir.GlobalVariable)
    return flag


def _chunk_function(module: ir.Module, body: ir.Function, ctx_type: ir.LiteralStructType):
    """`@<body>.chunk(ctx, c)`: iterations [c * trips / chunks, (c + 1) * trips / chunks)."""
    fn = ir.Function(module, CHUNK_FN, name=f"{body.name}.chunk")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = b.bitcast(fn.args[0], ctx_type.as_pointer())
    chunk = fn.args[1]
    lb, step, trips, chunks, *captured = [
        b.load(b.gep(ctx, [I32(0), I32(i)], inbounds=True), typ=t)
        for i, t in enumerate(ctx_type.elements)
    ]
    begin = b.sdiv(b.mul(chunk, trips), chunks)
    end = b.sdiv(b.mul(b.add(chunk, I64(1)), trips), chunks)
    b.call(body, [b.add(lb, b.mul(begin, step)), b.add(lb, b.mul(end, step)), *captured])
    b.ret_void()
    return fn


def _launch_function(module: ir.Module, body: ir.Function, threads: int) -> ir.Function:
    """`@<body>.launch(lb, ub, step, captured...)`, built once per body function."""
    name = f"{body.name}.launch"
    try:
        return module.get_global(name)  # type: ignore[return-value]
    except KeyError:
        pass
    captured_types = [a.type for a in body.args[2:]]
    fn = ir.Function(
        module, ir.FunctionType(ir.VoidType(), [I64, I64, I64, *captured_types]), name=name
    )
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    body.attributes.add("noinline")
    ctx_type = ir.LiteralStructType([I64, I64, I64, I64, *captured_types])
    chunk_fn = _chunk_function(module, body, ctx_type)
    run = _declare(
        module, PARALLEL_RUN, ir.FunctionType(ir.VoidType(), [CHUNK_FN.as_pointer(), VOID_PTR,
                                                              I64, I64]),
    )

    lb, ub, step, *captured = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = b.alloca(ctx_type)  # in the entry block: a static slot wherever this is inlined
    # trips = ceil((ub - lb) / step) for step > 0, <= 0 for an empty range
    trips = b.sdiv(b.add(b.sub(ub, lb), b.sub(step, I64(1))), step)
    n = b.select(b.icmp_signed("<", trips, I64(threads)), trips, I64(threads))
    forked = b.icmp_signed("!=", b.load(_fork_flag(module), typ=I32), I32(0))
    with b.if_else(b.or_(b.icmp_signed("<", n, I64(2)), forked)) as (serial, parallel):
        with serial:
            b.call(body, [lb, ub, *captured])
        with parallel:
            limit = I64(min(CHUNKS_PER_THREAD * threads, MAX_CHUNKS))
            chunks = b.select(b.icmp_signed("<", trips, limit), trips, limit)
            for i, value in enumerate([lb, step, trips, chunks, *captured]):
                b.store(value, b.gep(ctx, [I32(0), I32(i)], inbounds=True))
            b.call(run, [chunk_fn, b.bitcast(ctx, VOID_PTR), chunks, n])
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
    body = builder.module.get_global(callee)
    assert isinstance(body, ir.Function)
    launch = _launch_function(builder.module, body, threads)
    builder.call(launch, [*bounds, *captured])
