"""`par.launch` as LLVM IR: a loop's iterations split into chunks run by onnxc's thread pool.

A launch of body function `@f(lo, hi, captured...)` becomes, at the launch site,

    ctx = alloca {lb, step, trips, chunks, @f.chunk, captured...}   ; in the entry block
    store @f.chunk and the captured values into ctx
    onnxc.parallel_launch(ctx, lb, ub, step, threads)

with one function per body, next to `@f`,

    internal void @f.chunk(i8* ctx, i64 lo, i64 hi)                ; f on [lo, hi)
      f(lo, hi, captured... loaded from ctx)

and two shared by every launch of the module (internal, `noinline`: built once per module)

    internal void @onnxc.parallel_launch(i8* ctx, i64 lb, i64 ub, i64 step, i64 threads)
      trips = ceil((ub - lb) / step); n = min(trips, threads)
      n < 2 or forked:  ctx.fn(ctx, lb, ub)                         ; no parallel region
      else:   ctx.{lb, step, trips, chunks = min(trips, 8 n)} = ...
              onnxc_parallel_run(@onnxc.parallel_chunk, ctx, chunks, n)
    internal void @onnxc.parallel_chunk(i8* ctx, i64 c)             ; chunk c of 0..trips
      ctx.fn(ctx, lb + c * trips / chunks * step, lb + (c + 1) * trips / chunks * step)

What is per launch is only what differs (storing and loading the captured values): the
trip count, the serial test and the chunk bounds were a `.launch` and a `.chunk` of about 60
instructions per parallel loop, a fifth of a model's LLVM IR (densenet121 has 245 parallel
loops). `@f` keeps its signature, so its `noalias` pointer arguments still tell LLVM that the
captured buffers do not overlap.

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

from onnxc.runtime.pool_ir import CHUNK_FN, FORK_FLAG, MAX_CHUNKS, PARALLEL_RUN

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID_PTR = ir.IntType(8).as_pointer()
CHUNKS_PER_THREAD = 8

RANGE_FN = ir.FunctionType(ir.VoidType(), [VOID_PTR, I64, I64])
"""`@f.chunk(ctx, lo, hi)`: the body on iterations [lo, hi)"""
HEADER = ir.LiteralStructType([I64, I64, I64, I64, RANGE_FN.as_pointer()])
"""What every launch context starts with: lb, step, trips, chunks, its `@f.chunk`."""
_FN_FIELD = len(HEADER.elements) - 1
LAUNCH = "onnxc.parallel_launch"
CHUNK = "onnxc.parallel_chunk"


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


def _shared(module: ir.Module, name: str, fnty: ir.FunctionType):
    """(the function, a builder in its entry block), or None if the module has it already."""
    try:
        module.get_global(name)
        return None
    except KeyError:
        pass
    fn = ir.Function(module, fnty, name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _header_fields(b: ir.IRBuilder, ctx: ir.Value) -> list[ir.Value]:
    """Pointers to lb, step, trips, chunks and fn of the context at `ctx` (an i8*)."""
    header = b.bitcast(ctx, HEADER.as_pointer())
    return [b.gep(header, [I32(0), I32(i)], inbounds=True) for i in range(len(HEADER.elements))]


def _chunk_runner(module: ir.Module) -> ir.Function:
    """`@onnxc.parallel_chunk(ctx, c)`: iterations [c * trips / chunks, (c + 1) * trips /
    chunks) of the launch at `ctx`."""
    made = _shared(module, CHUNK, CHUNK_FN)
    if made is None:
        return module.get_global(CHUNK)  # type: ignore[return-value]
    fn, b = made
    ctx, chunk = fn.args
    lb, step, trips, chunks, body = [b.load(p, typ=t) for p, t in
                                     zip(_header_fields(b, ctx), HEADER.elements)]
    begin = b.sdiv(b.mul(chunk, trips), chunks)
    end = b.sdiv(b.mul(b.add(chunk, I64(1)), trips), chunks)
    b.call(body, [ctx, b.add(lb, b.mul(begin, step)), b.add(lb, b.mul(end, step))])
    b.ret_void()
    return fn


def _launcher(module: ir.Module) -> ir.Function:
    """`@onnxc.parallel_launch(ctx, lb, ub, step, threads)`, shared by the module's launches."""
    made = _shared(module, LAUNCH, ir.FunctionType(ir.VoidType(),
                                                   [VOID_PTR, I64, I64, I64, I64]))
    if made is None:
        return module.get_global(LAUNCH)  # type: ignore[return-value]
    fn, b = made
    run = _declare(module, PARALLEL_RUN, ir.FunctionType(
        ir.VoidType(), [CHUNK_FN.as_pointer(), VOID_PTR, I64, I64]))
    ctx, lb, ub, step, threads = fn.args
    lb_at, step_at, trips_at, chunks_at, body_at = _header_fields(b, ctx)
    # trips = ceil((ub - lb) / step) for step > 0, <= 0 for an empty range
    trips = b.sdiv(b.add(b.sub(ub, lb), b.sub(step, I64(1))), step)
    n = b.select(b.icmp_signed("<", trips, threads), trips, threads)
    forked = b.icmp_signed("!=", b.load(_fork_flag(module), typ=I32), I32(0))
    with b.if_else(b.or_(b.icmp_signed("<", n, I64(2)), forked)) as (serial, parallel):
        with serial:
            b.call(b.load(body_at, typ=RANGE_FN.as_pointer()), [ctx, lb, ub])
        with parallel:
            wanted = b.mul(threads, I64(CHUNKS_PER_THREAD))
            limit = b.select(b.icmp_signed("<", wanted, I64(MAX_CHUNKS)), wanted, I64(MAX_CHUNKS))
            chunks = b.select(b.icmp_signed("<", trips, limit), trips, limit)
            for value, at in ((lb, lb_at), (step, step_at), (trips, trips_at),
                              (chunks, chunks_at)):
                b.store(value, at)
            b.call(run, [_chunk_runner(module), ctx, chunks, n])
    b.ret_void()
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
