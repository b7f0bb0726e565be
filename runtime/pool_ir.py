"""The LLVM IR of onnxc's thread pool (runtime/thread_pool.py loads it; ahead-of-time
artifacts link it into their library): `onnxc_pool_run` and its helpers, and
`onnxc.parallel_launch`, which model code calls (lowering/to_llvm/launch_ir.py).

The pool (one per process, in the static memory of the pool module, each part on its own
cache line):

- `state` (i64) = job << 32 | front << 16 | back, where job = generation << 10 | helpers
  (a 22-bit generation, incremented per region, and how many helpers may take part); the
  chunks not claimed yet are [front, back). The caller publishes a region by storing (job,
  0, chunks). The caller claims from the front (an atomic add moves front from i to
  i + 1: chunk i), helpers from the back (a compare-and-swap moves back from i + 1 to i:
  chunk i). So at two threads the caller runs the first chunks and the helper the last ones
  in every region, and a kernel reads the rows the kernel before it wrote on the same core
  (from its own L2): with one shared counter the chunks fell to the threads at random and
  half of every activation crossed cores (a depthwise conv of 28x28x136 at T=2 took 62-86
  us against 21 us in fronts and backs, on a 2-vCPU Zen 3). The value a claim replaced
  describes everything about it (which job, which chunks are left), so a claim is valid
  exactly when that value says front < back and, for a helper, that it is one of the
  job's helpers - whatever the helper read earlier. A helper delayed between reading
  `state` and swapping cannot claim a chunk of a later job with a stale idea of it: its
  swap fails, or (if `state` came back to the very same value, after 2**22 regions) the
  claim is a valid one of the job that value describes.
- `job`: {chunk function, ctx} of the current region, read by a helper only after a
  successful claim: the region cannot end before that chunk is done, so the caller cannot
  be writing the next region's job meanwhile.
- `done` (i32): chunks helpers have finished, cumulative (modulo 2**32). A helper adds
  the chunks it ran when it finds no chunk left; the caller waits until `done` reaches
  its value at publication plus the chunks it did not run itself.
- `busy` (i32): taken with a try-lock for the duration of a region. A region that finds the
  pool busy (another thread's region, or a nested one from inside a chunk) runs its chunks
  serially on its own thread: concurrent callers and nesting can never deadlock or wait.
- helper threads, created lazily (pthread_create, all signals blocked, detached) the first
  time a region needs them and never destroyed; helper w (0-based) takes part only in jobs
  with helpers > w, so a model compiled for T threads never runs on more. An idle helper
  spins for `spin_ns` (`pause` between reads of `state`), then sleeps in
  futex(FUTEX_WAIT) on the job half of `state`; the caller issues FUTEX_WAKE only when
  `sleepers` is nonzero. The caller waits for `done` the same way (spin, then sleep with
  `caller_waiting` set; a helper reporting to `done` wakes it).

Memory ordering (LLVM/C++ model; on x86 the orderings below cost nothing beyond the locked
instruction every atomic read-modify-write is, and an `xchg` for the seq_cst stores):

- Publishing: the caller writes `job` (relaxed stores, skipped when unchanged), then stores
  `state` seq_cst (a release). A helper's claim is an acquire read-modify-write of `state`
  that reads from that store (or a later claim, which continues its release sequence), so
  it sees `job` and every byte the caller wrote before the region (the chunks' inputs).
- Finishing: a helper adds to `done` seq_cst (a release) after running its chunks; the
  caller's acquire load of `done` then sees everything those chunks wrote. Every claimed
  chunk is counted exactly once, so when the caller has seen the count complete, no
  helper will touch `job`, `done` or the region's buffers again: a late helper only reads
  `state` and fails to claim.
- Sleeping (no lost wake-ups): a helper does `sleepers += 1` (seq_cst), re-reads `state`
  (seq_cst) and sleeps only if the job half is still the one it has seen (the kernel
  rechecks that word atomically); the caller stores `state` (seq_cst), then reads
  `sleepers` (seq_cst). Both seq_cst: either the helper sees the new job or the caller
  sees the sleeper and wakes it. `caller_waiting` and `done` are the same pair in the
  other direction.

Supported: Linux on x86-64, AArch64, RISC-V 64, POWER (little-endian) and s390x (futex
syscall numbers below). Elsewhere `supported()` is False and models compile for one thread.
"""

from __future__ import annotations

import platform
import sys

from llvmlite import ir

from onnxc.lowering.to_llvm.launch_ir import define_launcher

PARALLEL_RUN = "onnxc_pool_run"
"""The pool's entry, which `onnxc.parallel_launch` (lowering/to_llvm/launch_ir.py) calls."""
FORK_FLAG = "onnxc_serial_after_fork"
"""An i32 model code and the pool read: nonzero in a child forked after the pool loaded."""

MAX_HELPERS = 1023
MAX_CHUNKS = 16384
"""Most chunks a region may have (16-bit fields of `state`; the caller's last, failing
claim moves `front` one past `back`). Model code asks for at most 8 per thread."""
DEFAULT_SPIN_NS = 200_000
"""How long an idle helper (and a caller waiting for helpers' chunks) spins before sleeping.
Inference calls in a loop come back within ~20-100 us of Python, so helpers are still
awake; on a machine without other work a spinning helper costs nothing, and under
contention it burns at most this much CPU per idle gap. Set with $ONNXC_SPIN_US."""

FUTEX_SYSCALLS = {"x86_64": 202, "aarch64": 98, "riscv64": 98, "ppc64le": 221, "s390x": 238}
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_SIG_BLOCK, _SIG_SETMASK = 0, 2
_CLOCK_MONOTONIC = 1

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()
I8P = I8.as_pointer()
CHUNK_FN = ir.FunctionType(VOID, [I8P, I64])
"""`void chunk(i8* ctx, i64 c)`: one chunk of a parallel loop."""
THREAD_FN = ir.FunctionType(I8P, [I8P])


def supported() -> bool:
    """Whether this platform has what the pool uses (Linux futexes, a known syscall number)."""
    return sys.platform.startswith("linux") and platform.machine() in FUTEX_SYSCALLS


class _PoolIR:
    """Builds the pool's LLVM module: one `_emit_*` method per function."""

    def __init__(self, triple: str, data_layout: str, machine: str):
        import llvmlite.binding as llvm

        self.target_data = llvm.create_target_data(data_layout)
        self.machine = machine
        m = self.module = ir.Module(name="onnxc_thread_pool")
        m.triple, m.data_layout = triple, data_layout
        self.state_line = self._line("onnxc.pool.state", [I64])
        self.job_line = self._line("onnxc.pool.job", [CHUNK_FN.as_pointer(), I8P])  # fn, ctx
        self.done_line = self._line("onnxc.pool.done", [I32, I32])  # done, caller_waiting
        self.sleep_line = self._line("onnxc.pool.sleepers", [I32])
        self.owner_line = self._line("onnxc.pool.owner", [I32, I32, I64])  # busy, helpers, spin_ns
        owner_type = self.owner_line.value_type
        self.owner_line.initializer = ir.Constant(owner_type, [
            I32(0), I32(0), I64(DEFAULT_SPIN_NS), ir.Constant(owner_type.elements[3], None)])
        self.fork_flag = ir.GlobalVariable(m, I32, name=FORK_FLAG)  # defined by the loader
        sigset = ir.ArrayType(I8, 128).as_pointer()
        self.sigset = sigset.pointee

        def declare(name: str, ret: ir.Type, *args: ir.Type, **options) -> ir.Function:
            return ir.Function(m, ir.FunctionType(ret, list(args), **options), name)

        self.syscall = declare("syscall", I64, I64, var_arg=True)
        self.clock_gettime = declare(
            "clock_gettime", I32, I32, ir.LiteralStructType([I64, I64]).as_pointer())
        self.pthread_create = declare(
            "pthread_create", I32, I64.as_pointer(), I8P, THREAD_FN.as_pointer(), I8P)
        self.pthread_detach = declare("pthread_detach", I32, I64)
        self.sigfillset = declare("sigfillset", I32, sigset)
        self.pthread_sigmask = declare("pthread_sigmask", I32, I32, sigset, sigset)
        self._emit_now()
        self._emit_pause()
        self._emit_futex()
        self._emit_worker()
        self._emit_make_helpers()
        self._emit_run()
        self._emit_accessors()
        define_launcher(m, m.get_global(PARALLEL_RUN), CHUNK_FN, self.fork_flag, MAX_CHUNKS)

    def _line(self, name: str, fields: list[ir.Type]) -> ir.GlobalVariable:
        """A zero-initialised global of `fields` padded to whole 64-byte cache lines and
        aligned to one, so data that different threads write never shares a line."""
        size = ir.LiteralStructType(fields).get_abi_size(self.target_data)
        padding = [ir.ArrayType(I8, -size % 64)] if size % 64 else []
        struct = ir.LiteralStructType([*fields, *padding])
        var = ir.GlobalVariable(self.module, struct, name=name)  # not internal, which LLVM
        var.initializer = ir.Constant(struct, None)  # would split into unaligned fields
        var.align = 64
        return var

    # ------------------------------------------------------------ addresses

    @staticmethod
    def _field(b: ir.IRBuilder, line: ir.GlobalVariable, index: int) -> ir.Value:
        return b.gep(line, [I32(0), I32(index)], inbounds=True)

    def _state(self, b: ir.IRBuilder) -> ir.Value:
        return self._field(b, self.state_line, 0)

    def _job_word(self, b: ir.IRBuilder) -> ir.Value:
        """The job half of `state` (its high 32 bits), which idle helpers sleep on."""
        high = 1 if sys.byteorder == "little" else 0  # JIT code runs on this machine
        words = b.bitcast(self._state(b), I32.as_pointer())
        return b.gep(words, [I32(high)], inbounds=True)

    def _job(self, b: ir.IRBuilder, index: int) -> ir.Value:
        """Field `index` of the job: 0 chunk function, 1 ctx."""
        return self._field(b, self.job_line, index)

    def _done(self, b: ir.IRBuilder) -> ir.Value:
        return self._field(b, self.done_line, 0)

    def _caller_waiting(self, b: ir.IRBuilder) -> ir.Value:
        return self._field(b, self.done_line, 1)

    # ------------------------------------------------------------ small functions

    def _define(self, name: str, ret: ir.Type, args: list[ir.Type],
                internal: bool = True) -> tuple[ir.Function, ir.IRBuilder]:
        fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        if internal:
            fn.linkage = "internal"
        fn.attributes.add("nounwind")
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    def _emit_now(self) -> None:
        self.now, b = self._define("onnxc.pool.now_ns", I64, [])
        ts = b.alloca(self.clock_gettime.args[1].type.pointee)
        b.call(self.clock_gettime, [I32(_CLOCK_MONOTONIC), ts])
        seconds = b.load(b.gep(ts, [I32(0), I32(0)]))
        nanos = b.load(b.gep(ts, [I32(0), I32(1)]))
        b.ret(b.add(b.mul(seconds, I64(1_000_000_000)), nanos))

    def _emit_pause(self) -> None:
        """A spin-wait hint: x86 `pause`, AArch64 `yield`, nothing elsewhere."""
        self.pause, b = self._define("onnxc.pool.pause", VOID, [])
        if self.machine == "x86_64":
            hint = ir.Function(self.module, ir.FunctionType(VOID, []), "llvm.x86.sse2.pause")
            b.call(hint, [])
        elif self.machine == "aarch64":
            hint = ir.Function(self.module, ir.FunctionType(VOID, [I32]), "llvm.aarch64.hint")
            b.call(hint, [I32(1)])
        b.ret_void()

    def _emit_futex(self) -> None:
        number = I64(FUTEX_SYSCALLS[self.machine])
        self.futex_wait, b = self._define("onnxc.pool.futex_wait", VOID, [I32.as_pointer(), I32])
        address, expected = self.futex_wait.args
        b.call(self.syscall, [number, address, I32(_FUTEX_WAIT_PRIVATE), expected,
                              ir.Constant(I8P, None)])
        b.ret_void()
        self.futex_wake, b = self._define("onnxc.pool.futex_wake", VOID, [I32.as_pointer(), I32])
        address, count = self.futex_wake.args
        b.call(self.syscall, [number, address, I32(_FUTEX_WAKE_PRIVATE), count])
        b.ret_void()

    def _spin_phis(self, b: ir.IRBuilder, start: ir.Block) -> tuple[ir.PhiInstr, ir.PhiInstr]:
        """(count, deadline) of a spin loop whose head `b` is at, entered from `start`;
        deadline 0 = the clock not read yet (a short wait never reads it)."""
        count, deadline = b.phi(I64, "spins"), b.phi(I64, "deadline")
        count.add_incoming(I64(0), start)
        deadline.add_incoming(I64(0), start)
        return count, deadline

    def _spin_step(self, b: ir.IRBuilder, count: ir.PhiInstr, deadline: ir.PhiInstr,
                   again: ir.Block, give_up: ir.Block) -> None:
        """Pause, then branch to the loop head `again`, or to `give_up` once `spin_ns` have
        passed since the 64th step (the clock is read every 64 steps)."""
        b.call(self.pause, [])
        next_count = b.add(count, I64(1))
        count.add_incoming(next_count, b.block)
        deadline.add_incoming(deadline, b.block)
        check = b.append_basic_block("spin.clock")
        b.cbranch(b.icmp_unsigned("==", b.and_(next_count, I64(63)), I64(0)), check, again)
        b.position_at_end(check)
        now = b.call(self.now, [])
        spin = b.load_atomic(self._field(b, self.owner_line, 2), "monotonic", 8)
        unset = b.icmp_unsigned("==", deadline, I64(0))
        count.add_incoming(next_count, check)
        deadline.add_incoming(b.select(unset, b.add(now, spin), deadline), check)
        expired = b.and_(b.not_(unset), b.icmp_signed(">", now, deadline))
        b.cbranch(expired, give_up, again)

    # ------------------------------------------------------------ helper threads

    def _emit_worker(self) -> None:
        """`worker(arg)`, arg = helper index | job half of `state` at creation << 32: wait
        for another job, claim its chunks while it has some and lets this helper take part,
        report them to `done`, repeat. Never returns."""
        fn, b = self._define("onnxc.pool.worker", I8P, [I8P])
        self.worker = fn
        entry = b.block
        names = ["top", "spin.start", "spin", "spin.step", "sleep", "sleep.wait", "sleep.end",
                 "got", "claim", "claim.swap", "run", "report", "report.add", "report.wake",
                 "report.none", "report.done"]
        blocks = dict(zip(names, (fn.append_basic_block(n) for n in names)))
        arg = b.ptrtoint(fn.args[0], I64)
        index = b.and_(arg, I64(0xFFFF))
        initial = b.lshr(arg, I64(32))
        b.branch(blocks["top"])

        b.position_at_end(blocks["top"])  # a job half other than `seen` is a new job
        seen = b.phi(I64, "seen")
        seen.add_incoming(initial, entry)
        state = b.load_atomic(self._state(b), "acquire", 8)
        b.cbranch(b.icmp_unsigned("!=", b.lshr(state, I64(32)), seen),
                  blocks["got"], blocks["spin.start"])

        b.position_at_end(blocks["spin.start"])
        b.branch(blocks["spin"])
        b.position_at_end(blocks["spin"])
        count, deadline = self._spin_phis(b, blocks["spin.start"])
        polled = b.load_atomic(self._state(b), "acquire", 8)
        b.cbranch(b.icmp_unsigned("!=", b.lshr(polled, I64(32)), seen),
                  blocks["got"], blocks["spin.step"])
        b.position_at_end(blocks["spin.step"])
        self._spin_step(b, count, deadline, blocks["spin"], blocks["sleep"])

        b.position_at_end(blocks["sleep"])  # no lost wake-up: see the module docstring
        sleepers = self._field(b, self.sleep_line, 0)
        b.atomic_rmw("add", sleepers, I32(1), "seq_cst")
        latest = b.load_atomic(self._state(b), "seq_cst", 8)
        b.cbranch(b.icmp_unsigned("==", b.lshr(latest, I64(32)), seen),
                  blocks["sleep.wait"], blocks["sleep.end"])
        b.position_at_end(blocks["sleep.wait"])
        b.call(self.futex_wait, [self._job_word(b), b.trunc(seen, I32)])
        b.branch(blocks["sleep.end"])
        b.position_at_end(blocks["sleep.end"])
        b.atomic_rmw("sub", sleepers, I32(1), "seq_cst")
        seen.add_incoming(seen, blocks["sleep.end"])
        b.branch(blocks["top"])

        b.position_at_end(blocks["got"])  # a job was published (and may be over)
        observed = b.phi(I64, "observed")
        observed.add_incoming(state, blocks["top"])
        observed.add_incoming(polled, blocks["spin"])
        job = b.lshr(observed, I64(32))
        seen.add_incoming(job, blocks["report.none"])
        seen.add_incoming(job, blocks["report.done"])
        b.branch(blocks["claim"])

        b.position_at_end(blocks["claim"])  # `current` describes the job and its chunks left
        current, ran = b.phi(I64, "current"), b.phi(I32, "ran")
        current.add_incoming(observed, blocks["got"])
        ran.add_incoming(I32(0), blocks["got"])
        front, back = self._front_and_back(b, current)
        helpers = b.and_(b.lshr(current, I64(32)), I64(MAX_HELPERS))
        eligible = b.and_(b.and_(b.icmp_unsigned("==", b.lshr(current, I64(32)), job),
                                 b.icmp_unsigned("<", index, helpers)),
                          b.icmp_unsigned("<", front, back))
        chunk = b.sub(back, I64(1))  # helpers take the last chunk left
        b.cbranch(eligible, blocks["claim.swap"], blocks["report"])

        b.position_at_end(blocks["claim.swap"])  # succeeds only if `current` is still true
        pair = b.cmpxchg(self._state(b), current, b.sub(current, I64(1)), "acq_rel", "acquire")
        current.add_incoming(b.extract_value(pair, 0), blocks["claim.swap"])
        ran.add_incoming(ran, blocks["claim.swap"])
        b.cbranch(b.extract_value(pair, 1), blocks["run"], blocks["claim"])

        b.position_at_end(blocks["run"])  # the job is open (this chunk is not done), so
        chunk_fn = b.load_atomic(self._job(b, 0), "monotonic", 8)  # its fields are stable
        ctx = b.load_atomic(self._job(b, 1), "monotonic", 8)
        b.call(chunk_fn, [ctx, chunk])
        current.add_incoming(b.load_atomic(self._state(b), "acquire", 8), blocks["run"])
        ran.add_incoming(b.add(ran, I32(1)), blocks["run"])
        b.branch(blocks["claim"])

        b.position_at_end(blocks["report"])  # nothing left for us: count what we ran
        b.cbranch(b.icmp_unsigned("==", ran, I32(0)), blocks["report.none"],
                  blocks["report.add"])
        b.position_at_end(blocks["report.add"])
        b.atomic_rmw("add", self._done(b), ran, "seq_cst")
        waiting = b.load_atomic(self._caller_waiting(b), "seq_cst", 4)
        b.cbranch(b.icmp_unsigned("!=", waiting, I32(0)), blocks["report.wake"],
                  blocks["report.done"])
        b.position_at_end(blocks["report.wake"])
        b.call(self.futex_wake, [self._done(b), I32(1)])
        b.branch(blocks["report.done"])
        b.position_at_end(blocks["report.none"])
        b.branch(blocks["top"])
        b.position_at_end(blocks["report.done"])
        b.branch(blocks["top"])

    @staticmethod
    def _front_and_back(b: ir.IRBuilder, state: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(front, back) of a `state` value: the chunks not claimed yet are [front, back)."""
        return b.and_(b.lshr(state, I64(16)), I64(0xFFFF)), b.and_(state, I64(0xFFFF))

    def _emit_make_helpers(self) -> None:
        """`pool.make_helpers(wanted) -> i64`: start helper threads up to `wanted` (called
        with the pool held); the number that exist. A failed pthread_create just leaves
        fewer helpers."""
        fn, b = self._define("onnxc.pool.make_helpers", I64, [I64])
        self.make_helpers = fn
        entry = b.block
        tid = b.alloca(I64)
        blocked, saved = b.alloca(self.sigset), b.alloca(self.sigset)
        made_field = self._field(b, self.owner_line, 1)
        initial = b.zext(b.load_atomic(made_field, "monotonic", 4), I64)
        check, create, created, finish = (fn.append_basic_block(n) for n in (
            "check", "create", "created", "finish"))
        b.branch(check)
        b.position_at_end(check)
        made = b.phi(I64, "made")
        made.add_incoming(initial, entry)
        enough = b.or_(b.icmp_signed(">=", made, fn.args[0]),
                       b.icmp_signed(">=", made, I64(MAX_HELPERS)))
        b.cbranch(enough, finish, create)

        b.position_at_end(create)  # helpers block every signal: Python handles them
        job = b.lshr(b.load_atomic(self._state(b), "monotonic", 8), I64(32))
        arg = b.inttoptr(b.or_(made, b.shl(job, I64(32))), I8P)
        b.call(self.sigfillset, [blocked])
        b.call(self.pthread_sigmask, [I32(_SIG_BLOCK), blocked, saved])
        status = b.call(self.pthread_create, [tid, ir.Constant(I8P, None), self.worker, arg])
        b.call(self.pthread_sigmask, [I32(_SIG_SETMASK), saved,
                                      ir.Constant(self.sigset.as_pointer(), None)])
        b.cbranch(b.icmp_signed("!=", status, I32(0)), finish, created)

        b.position_at_end(created)
        b.call(self.pthread_detach, [b.load(tid)])
        more = b.add(made, I64(1))
        b.store_atomic(b.trunc(more, I32), made_field, "monotonic", 4)
        made.add_incoming(more, created)
        b.branch(check)

        b.position_at_end(finish)
        b.ret(made)

    # ------------------------------------------------------------ the entry point

    def _emit_run(self) -> None:
        """`onnxc_pool_run(chunk, ctx, chunks, threads)`: see the module docstring."""
        fn, b = self._define(PARALLEL_RUN, VOID, [CHUNK_FN.as_pointer(), I8P, I64, I64],
                             internal=False)
        chunk_fn, ctx, chunks, threads = fn.args
        names = ["lock", "make", "unlock", "publish", "wake", "own", "own.run", "wait",
                 "wait.start", "wait.spin", "wait.step", "wait.sleep", "wait.recheck",
                 "wait.futex", "wait.woken", "finish", "serial", "serial.run", "serial.chunk",
                 "serial.end"]
        blocks = dict(zip(names, (fn.append_basic_block(n) for n in names)))
        n = b.select(b.icmp_signed("<", threads, chunks), threads, chunks)
        wanted = b.sub(n, I64(1))
        forked = b.icmp_signed("!=", b.load_atomic(self.fork_flag, "monotonic", 4), I32(0))
        too_many = b.icmp_unsigned(">", chunks, I64(MAX_CHUNKS))  # (model code never asks)
        b.cbranch(b.or_(b.or_(b.icmp_signed("<", wanted, I64(1)), forked), too_many),
                  blocks["serial"], blocks["lock"])

        b.position_at_end(blocks["lock"])  # busy: another region or a nested one -> serial
        busy = self._field(b, self.owner_line, 0)
        pair = b.cmpxchg(busy, I32(0), I32(1), "acquire", "monotonic")
        b.cbranch(b.extract_value(pair, 1), blocks["make"], blocks["serial"])

        b.position_at_end(blocks["make"])
        made = b.call(self.make_helpers, [wanted])
        helpers = b.select(b.icmp_signed("<", made, wanted), made, wanted)
        b.cbranch(b.icmp_signed("<", helpers, I64(1)), blocks["unlock"], blocks["publish"])
        b.position_at_end(blocks["unlock"])
        b.store_atomic(I32(0), busy, "release", 4)
        b.branch(blocks["serial"])

        b.position_at_end(blocks["publish"])
        previous = b.load_atomic(self._state(b), "monotonic", 8)  # only we change it now
        generation = b.add(b.lshr(previous, I64(42)), I64(1))  # modulo 2**22
        published = b.or_(b.or_(b.shl(generation, I64(42)), b.shl(helpers, I64(32))),
                          chunks)  # front 0, back chunks
        for i, value in enumerate([chunk_fn, ctx]):  # unchanged: keep helpers' cached copy
            field = self._job(b, i)
            with b.if_then(b.icmp_unsigned("!=", b.load_atomic(field, "monotonic", 8), value)):
                b.store_atomic(value, field, "monotonic", 8)
        base = b.load_atomic(self._done(b), "monotonic", 4)  # no helper adds to it now
        b.store_atomic(published, self._state(b), "seq_cst", 8)
        sleeping = b.load_atomic(self._field(b, self.sleep_line, 0), "seq_cst", 4)
        published_from = b.block
        b.cbranch(b.icmp_unsigned("!=", sleeping, I32(0)), blocks["wake"], blocks["own"])
        b.position_at_end(blocks["wake"])
        b.call(self.futex_wake, [self._job_word(b), I32(2**31 - 1)])
        b.branch(blocks["own"])

        b.position_at_end(blocks["own"])  # the caller claims chunks too, from the front
        mine = b.phi(I64, "mine")
        mine.add_incoming(I64(0), published_from)
        mine.add_incoming(I64(0), blocks["wake"])
        claimed = b.atomic_rmw("add", self._state(b), I64(1 << 16), "monotonic")
        chunk, back = self._front_and_back(b, claimed)
        b.cbranch(b.icmp_unsigned("<", chunk, back), blocks["own.run"], blocks["wait"])
        b.position_at_end(blocks["own.run"])
        b.call(chunk_fn, [ctx, chunk])
        mine.add_incoming(b.add(mine, I64(1)), blocks["own.run"])
        b.branch(blocks["own"])

        b.position_at_end(blocks["wait"])  # for the chunks helpers claimed, no more
        target = b.add(base, b.trunc(b.sub(chunks, mine), I32))  # modulo 2**32
        finished = b.load_atomic(self._done(b), "acquire", 4)
        b.cbranch(b.icmp_unsigned("==", finished, target), blocks["finish"], blocks["wait.start"])
        b.position_at_end(blocks["wait.start"])
        b.branch(blocks["wait.spin"])
        b.position_at_end(blocks["wait.spin"])
        count, deadline = self._spin_phis(b, blocks["wait.start"])
        finished = b.load_atomic(self._done(b), "acquire", 4)
        b.cbranch(b.icmp_unsigned("==", finished, target), blocks["finish"], blocks["wait.step"])
        b.position_at_end(blocks["wait.step"])
        self._spin_step(b, count, deadline, blocks["wait.spin"], blocks["wait.sleep"])
        b.position_at_end(blocks["wait.sleep"])
        b.store_atomic(I32(1), self._caller_waiting(b), "seq_cst", 4)
        b.branch(blocks["wait.recheck"])
        b.position_at_end(blocks["wait.recheck"])
        finished = b.load_atomic(self._done(b), "seq_cst", 4)
        b.cbranch(b.icmp_unsigned("==", finished, target), blocks["wait.woken"],
                  blocks["wait.futex"])
        b.position_at_end(blocks["wait.futex"])
        b.call(self.futex_wait, [self._done(b), finished])
        b.branch(blocks["wait.recheck"])
        b.position_at_end(blocks["wait.woken"])
        b.store_atomic(I32(0), self._caller_waiting(b), "monotonic", 4)
        b.branch(blocks["finish"])

        b.position_at_end(blocks["finish"])
        b.store_atomic(I32(0), busy, "release", 4)
        b.ret_void()

        b.position_at_end(blocks["serial"])  # one thread, in order
        b.branch(blocks["serial.run"])
        b.position_at_end(blocks["serial.run"])
        c = b.phi(I64, "c")
        c.add_incoming(I64(0), blocks["serial"])
        b.cbranch(b.icmp_signed("<", c, chunks), blocks["serial.chunk"], blocks["serial.end"])
        b.position_at_end(blocks["serial.chunk"])
        b.call(chunk_fn, [ctx, c])
        c.add_incoming(b.add(c, I64(1)), blocks["serial.chunk"])
        b.branch(blocks["serial.run"])
        b.position_at_end(blocks["serial.end"])
        b.ret_void()

    def _emit_accessors(self) -> None:
        """Functions Python calls: the number of helper threads, the spin time."""
        fn, b = self._define("onnxc_pool_helpers", I64, [], internal=False)
        b.ret(b.zext(b.load_atomic(self._field(b, self.owner_line, 1), "monotonic", 4), I64))
        fn, b = self._define("onnxc_pool_set_spin_ns", VOID, [I64], internal=False)
        b.store_atomic(fn.args[0], self._field(b, self.owner_line, 2), "monotonic", 8)
        b.ret_void()


def pool_ir(target=None) -> ir.Module:
    """The pool's LLVM module for `target` (default: this machine, what `load` compiles;
    ahead-of-time artifacts link it into their library)."""
    from onnxc.target import host_target

    target = target or host_target()
    machine = platform.machine() if target is host_target() else target.arch
    return _PoolIR(target.triple, target.data_layout, machine).module
