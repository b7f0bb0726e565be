"""`onnxc.parallel_launch`: the one function through which model code starts a parallel
loop, in the thread pool's module.

Model code (lowering/to_llvm/launch.py) launches the loop of body `@f` as

    ctx = {lb, step, trips, chunks, @f.chunk, captured...}          ; HEADER, then captures
    onnxc.parallel_launch(ctx, lb, ub, step, threads)

and this module defines, next to `onnxc_pool_run` (runtime/pool_ir.py),

    void @onnxc.parallel_launch(i8* ctx, i64 lb, i64 ub, i64 step, i64 threads)
      trips = ceil((ub - lb) / step); n = min(trips, threads)
      n < 2 or forked:  ctx.fn(ctx, lb, ub)                         ; no parallel region
      else:   ctx.{lb, step, trips, chunks = min(trips, 8 n)} = ...
              onnxc_pool_run(@onnxc.parallel_chunk, ctx, chunks, n)
    internal void @onnxc.parallel_chunk(i8* ctx, i64 c)             ; chunk c of 0..trips
      ctx.fn(ctx, lb + c * trips / chunks * step, lb + (c + 1) * trips / chunks * step)

Nothing in them depends on the model, so they are compiled with the pool: once per process
(runtime/thread_pool.py, while a compile imports and runs its graph passes, on the core
they leave idle), and linked into ahead-of-time artifacts with it. Every module of model
code only declares `onnxc.parallel_launch`. When they were defined in each module (internal,
`noinline`), each chunk of a streamed compile compiled its own copy: about 7% of
MobileNetV2-like's LLVM time (0.12 s of CPU over its eight chunks).

`forked` is the process-wide flag `@onnxc_serial_after_fork`, set in a child after fork():
the pool's helper threads do not survive fork, so the child runs its loops serially.
"""

from __future__ import annotations

import re

from llvmlite import ir

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID_PTR = ir.IntType(8).as_pointer()
CHUNKS_PER_THREAD = 8

RANGE_FN = ir.FunctionType(ir.VoidType(), [VOID_PTR, I64, I64])
"""`@f.chunk(ctx, lo, hi)`: the body on iterations [lo, hi)"""
HEADER = ir.LiteralStructType([I64, I64, I64, I64, RANGE_FN.as_pointer()])
"""What every launch context starts with: lb, step, trips, chunks, its `@f.chunk`."""
LAUNCH = "onnxc.parallel_launch"
LAUNCH_FN = ir.FunctionType(ir.VoidType(), [VOID_PTR, I64, I64, I64, I64])
"""`onnxc.parallel_launch(ctx, lb, ub, step, threads)`"""
CHUNK = "onnxc.parallel_chunk"


def _header_fields(b: ir.IRBuilder, ctx: ir.Value) -> list[ir.Value]:
    """Pointers to lb, step, trips, chunks and fn of the context at `ctx` (an i8*)."""
    header = b.bitcast(ctx, HEADER.as_pointer())
    return [b.gep(header, [I32(0), I32(i)], inbounds=True) for i in range(len(HEADER.elements))]


def _define(module: ir.Module, name: str, fnty: ir.FunctionType,
            internal: bool) -> tuple[ir.Function, ir.IRBuilder]:
    fn = ir.Function(module, fnty, name=name)
    if internal:
        fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _define_chunk_runner(module: ir.Module, chunk_fn: ir.FunctionType) -> ir.Function:
    fn, b = _define(module, CHUNK, chunk_fn, internal=True)
    ctx, chunk = fn.args
    lb, step, trips, chunks, body = [b.load(p, typ=t) for p, t in
                                     zip(_header_fields(b, ctx), HEADER.elements)]
    begin = b.sdiv(b.mul(chunk, trips), chunks)
    end = b.sdiv(b.mul(b.add(chunk, I64(1)), trips), chunks)
    b.call(body, [ctx, b.add(lb, b.mul(begin, step)), b.add(lb, b.mul(end, step))])
    b.ret_void()
    return fn


def define_launcher(module: ir.Module, run: ir.Function, chunk_fn: ir.FunctionType,
                    fork_flag: ir.GlobalVariable, max_chunks: int) -> ir.Function:
    """Define `onnxc.parallel_launch` (exported) and its chunk runner (of type `chunk_fn`)
    in the pool's `module`, whose `run` is `onnxc_pool_run(chunk, ctx, chunks,
    threads)`."""
    fn, b = _define(module, LAUNCH, LAUNCH_FN, internal=False)
    ctx, lb, ub, step, threads = fn.args
    lb_at, step_at, trips_at, chunks_at, body_at = _header_fields(b, ctx)
    # trips = ceil((ub - lb) / step) for step > 0, <= 0 for an empty range
    trips = b.sdiv(b.add(b.sub(ub, lb), b.sub(step, I64(1))), step)
    n = b.select(b.icmp_signed("<", trips, threads), trips, threads)
    forked = b.icmp_signed("!=", b.load(fork_flag, typ=I32), I32(0))
    with b.if_else(b.or_(b.icmp_signed("<", n, I64(2)), forked)) as (serial, parallel):
        with serial:
            b.call(b.load(body_at, typ=RANGE_FN.as_pointer()), [ctx, lb, ub])
        with parallel:
            wanted = b.mul(threads, I64(CHUNKS_PER_THREAD))
            limit = b.select(b.icmp_signed("<", wanted, I64(max_chunks)), wanted,
                             I64(max_chunks))
            chunks = b.select(b.icmp_signed("<", trips, limit), trips, limit)
            for value, at in ((lb, lb_at), (step, step_at), (trips, trips_at),
                              (chunks, chunks_at)):
                b.store(value, at)
            b.call(run, [_define_chunk_runner(module, chunk_fn), ctx, chunks, n])
    b.ret_void()
    return fn


_PARALLEL_BODY = re.compile(r"_par\d+(\.chunk)?$")


def kernel_of(function: str) -> str:
    """The kernel a function belongs to: itself, or for an outlined parallel body
    (`<kernel>_par<k>`, and its `.chunk` helper: launch.py)
    the kernel it was outlined from. A kernel and its bodies stay in one module."""
    return _PARALLEL_BODY.sub("", function)


__all__ = ["CHUNK", "CHUNKS_PER_THREAD", "HEADER", "LAUNCH", "LAUNCH_FN", "RANGE_FN",
           "define_launcher", "kernel_of"]
