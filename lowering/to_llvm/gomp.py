"""`par.launch` as LLVM IR: a loop's iterations shared by OpenMP threads via `GOMP_parallel`.

For a launch of body function `@f(lo, hi, captured...)` this emits, next to `@f`:

    internal void @f.launch(i64 lb, i64 ub, i64 step, captured...)
      trips = ceil((ub - lb) / step); n = min(trips, threads)
      n < 2 or forked:  f(lb, ub, captured...)             ; no parallel region
      else:   ctx = alloca {lb, step, trips, chunks = min(trips, 8 n), next = 0, captured...}
              GOMP_parallel(@f.thread, ctx, n, 0)
    internal void @f.thread(i8* ctx)                       ; run by each of the n threads
      while (c = atomic next++) < chunks:                  ; chunk c of 0..trips
        f(lb + c * trips / chunks * step, lb + (c + 1) * trips / chunks * step, captured...)

and the launch site becomes one call of `@f.launch` (which LLVM inlines). `GOMP_parallel`
is libgomp's entry for `#pragma omp parallel` (what GCC emits): the calling thread takes
part itself and the call returns when every thread is done. Chunks are claimed, not dealt
out: a thread that starts late (woken from sleep, or preempted by another process on a busy
machine) takes fewer, where a static split would make the others wait for its whole share;
eight per thread bound the imbalance at the end to ~1/16 of the loop, for one atomic add per
chunk. `@f` is `noinline`, so its loops are compiled once rather than once per caller.
libgomp must be loaded into the process before such code is JIT-linked
(`onnxc.runtime.threads.load_openmp`, done by the JIT).

`forked` is the process-wide flag `@onnxc_serial_after_fork` (an i32 that threads.py defines
for the JIT linker and sets in a child after fork()): libgomp's thread pool does not survive
fork, and a region in the child would wait forever for workers that no longer exist.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID_PTR = ir.IntType(8).as_pointer()
THREAD_FN = ir.FunctionType(ir.VoidType(), [VOID_PTR])
GOMP_PARALLEL = "GOMP_parallel"
FORK_FLAG = "onnxc_serial_after_fork"
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
        flag = ir.GlobalVariable(module, I32, name=FORK_FLAG)  # external: defined by the runtime
    assert isinstance(flag, ir.GlobalVariable)
    return flag


def _thread_function(module: ir.Module, body: ir.Function, ctx_type: ir.LiteralStructType):
    fn = ir.Function(module, THREAD_FN, name=f"{body.name}.thread")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = b.bitcast(fn.args[0], ctx_type.as_pointer())
    fields = [b.gep(ctx, [I32(0), I32(i)], inbounds=True) for i in range(len(ctx_type.elements))]
    lb, step, trips, chunks, _, *captured = [
        b.load(field, typ=t) for field, t in zip(fields, ctx_type.elements)
    ]
    claim, work, done = (fn.append_basic_block(n) for n in ("claim", "work", "done"))
    b.branch(claim)
    b.position_at_end(claim)
    chunk = b.atomic_rmw("add", fields[4], I64(1), "monotonic", name="chunk")
    b.cbranch(b.icmp_signed("<", chunk, chunks), work, done)
    b.position_at_end(work)
    begin = b.sdiv(b.mul(chunk, trips), chunks)
    end = b.sdiv(b.mul(b.add(chunk, I64(1)), trips), chunks)
    b.call(body, [b.add(lb, b.mul(begin, step)), b.add(lb, b.mul(end, step)), *captured])
    b.branch(claim)
    b.position_at_end(done)
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
    ctx_type = ir.LiteralStructType([I64, I64, I64, I64, I64, *captured_types])
    worker = _thread_function(module, body, ctx_type)
    gomp = _declare(
        module, GOMP_PARALLEL,
        ir.FunctionType(ir.VoidType(), [THREAD_FN.as_pointer(), VOID_PTR, I32, I32]),
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
            limit = I64(CHUNKS_PER_THREAD * threads)
            chunks = b.select(b.icmp_signed("<", trips, limit), trips, limit)
            for i, value in enumerate([lb, step, trips, chunks, I64(0), *captured]):
                b.store(value, b.gep(ctx, [I32(0), I32(i)], inbounds=True))
            b.call(gomp, [worker, b.bitcast(ctx, VOID_PTR), b.trunc(n, I32), I32(0)])
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
