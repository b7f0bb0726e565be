"""This core's measured FP32 FMA peak, for benchmarks/bench.py's "% of peak" columns.

A formula (FMA pipes x vector width x clock) is wrong on some of the machines these
benchmarks run on: Zen 4 executes a 512-bit FMA as two 256-bit halves (32 flops per cycle,
not 64), and a VM's running clock is not the one /proc/cpuinfo shows. So the peak is timed:
a loop of 16 independent FMA chains on the host's widest float vectors (more chains than
any core's FMA latency x pipes), compiled by llvmlite for this CPU, one thread.

    python -m onnxc.tools.fma_peak      # prints GFLOP/s per core
"""

from __future__ import annotations

import ctypes
import time

CHAINS = 16
ITERATIONS = 20_000_000


def _kernel_ir(lanes: int) -> str:
    vec = f"<{lanes} x float>"
    lines = [f"define void @fma_loop(i64 %n, {vec}* %out) {{", "entry:", "  br label %loop",
             "loop:", "  %i = phi i64 [0, %entry], [%next, %loop]"]
    lines += [f"  %a{c} = phi {vec} [zeroinitializer, %entry], [%b{c}, %loop]"
              for c in range(CHAINS)]
    lines += [f"  %x0 = insertelement {vec} undef, float 1.0, i32 0",
              f"  %x = shufflevector {vec} %x0, {vec} undef, <{lanes} x i32> zeroinitializer"]
    lines += [f"  %b{c} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{c}, {vec} %x, {vec} %x)"
              for c in range(CHAINS)]
    lines += ["  %next = add i64 %i, 1", "  %more = icmp ult i64 %next, %n",
              "  br i1 %more, label %loop, label %done", "done:"]
    total = "%b0"
    for c in range(1, CHAINS):
        lines.append(f"  %s{c} = fadd {vec} {total}, %b{c}")
        total = f"%s{c}"
    lines += [f"  store {vec} {total}, {vec}* %out, align 4", "  ret void", "}",
              f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})"]
    return "\n".join(lines)


def measured_fma_peak(repeat: int = 3) -> float:
    """GFLOP/s of one core (best of `repeat` runs of ~0.1-0.2 s)."""
    import llvmlite.binding as llvm

    from onnxc.target import host_target

    lanes = max(4, host_target().vector_bits // 32)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_kernel_ir(lanes)), machine)
    engine.finalize_object()
    loop = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(
        engine.get_function_address("fma_loop"))
    out = (ctypes.c_float * lanes)()
    loop(ITERATIONS // 10, ctypes.addressof(out))  # warm-up: the clock ramps
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        loop(ITERATIONS, ctypes.addressof(out))
        seconds = time.perf_counter() - start
        best = max(best, ITERATIONS * CHAINS * lanes * 2 / seconds / 1e9)
    return best


if __name__ == "__main__":
    print(f"{measured_fma_peak():.1f} GFLOP/s per core (FP32 FMA)")
