"""LLVM optimisation and code generation of one large module, split over worker processes.

LLVM's O3 pipeline and instruction selection are most of a large model's compile (about 5 s
of ResNet-50's on a 2-core AVX2 machine), and llvmlite serialises every LLVM call behind one
lock, so threads cannot share the work. Our modules split cleanly instead: the lowering
emits one `internal noinline` function per kernel (plus its outlined parallel bodies) and an
entry that calls them, and no data globals. `split_module` cuts the IR text into parts of
about equal size, each defining some functions and declaring the rest; each part is
optimised and compiled to a relocatable object by `python -m onnxc.runtime.codegen_worker`,
and MCJIT links the objects into one engine (runtime/jit.py). Nothing crosses a part that
did not cross a function boundary before (every kernel is `noinline`), so the code is what
one process would have produced, kernel by kernel.

`CodegenPool` keeps the workers: each compiles any number of modules, given to it while the
caller emits more. The JIT uses it directly, sending chunks of kernels as the emitter makes
them (onnxc/pipeline.py `start_codegen`), so that LLVM works while Python emits;
`compile_parts` is the pool with one split part per worker.

The JIT's pool also has a lane in this process: a thread. llvmlite's lock lets one thread at
a time into LLVM, but ctypes releases the GIL for the call, so the thread compiles one chunk
while the main thread emits the next in Python; it costs no process start-up (about 0.2 s of
CPU per worker, on the same cores as the compile), which is why a module too small to pay
for a worker started with its emission still has its LLVM overlap the emission.

The workers also contain LLVM: llvmlite's LLVM is built with assertions, and an assertion
aborts its process. In a worker that is a `CompilationError` naming the signal; in the
compiling process (the thread lane, and every module compiled without a pool) it kills the
user's program, which is why every module is verified before LLVM optimises it.

Functions called from another part lose `internal` linkage (an object can only call another
object's global symbols); each engine resolves its own objects' symbols first, so two models
with a kernel of the same name do not meet.
"""

from __future__ import annotations

import abc
import contextlib
import json
import queue
import re
import signal
import struct
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from functools import cached_property

from onnxc.errors import CompilationError
from onnxc.lowering.to_llvm.launch_ir import kernel_of
from onnxc.runtime.object_code import compile_object
from onnxc.target import Target, initialize_llvm

PARALLEL_MIN_IR_BYTES = 700_000
"""Below this much IR text one process is faster: a worker costs about 0.2 s to start (about
what 3,000 loops ops make, onnxc/pipeline.py STREAMED_MIN_WORKER_OPS)."""

_DEFINE = re.compile(r'^define (?P<linkage>internal |private )?(?P<rest>.*?)@"(?P<name>[^"]+)"'
                     r'(?P<params>\(.*\))(?P<attrs>[^{]*)$')
_SYMBOL = re.compile(r'@"([^"]+)"')
@dataclass
class _Function:
    name: str
    header: str
    """the `define` line"""
    lines: list[str]
    """the whole definition, `define` line to closing brace"""
    linkage: str
    prototype: str
    """`<return type> @"name"(<params>)`, what a declaration needs"""

    @property
    def size(self) -> int:
        return len(self.lines)

    @property
    def copied(self) -> bool:
        """An internal `alwaysinline` function (lowering/to_llvm/direct.py SHARED_LOWERINGS):
        each part that calls it gets its own copy, which LLVM inlines there."""
        return self.linkage == "internal" and "alwaysinline" in self.header

    @cached_property
    def references(self) -> frozenset[str]:
        """The symbols its body names (callees, functions passed by pointer)."""
        return frozenset(m for line in self.lines[1:] for m in _SYMBOL.findall(line))


def _parse(text: str) -> tuple[list[str], list[_Function]]:
    """Top-level lines that are not function definitions, and the definitions in order."""
    preamble: list[str] = []
    functions: list[_Function] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _DEFINE.match(line) if line.startswith("define ") else None
        if match is None:
            preamble.append(line)
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        if end == len(lines):
            raise CompilationError(f"cannot split the module: @{match['name']} has no end")
        prototype = f'{match["rest"]}@"{match["name"]}"{_strip_param_names(match["params"])}'
        functions.append(_Function(match["name"], line, lines[i:end + 1],
                                   (match["linkage"] or "").strip(), prototype))
        i = end + 1
    return preamble, functions


def _strip_param_names(params: str) -> str:
    """`(ptr noalias %".1", i64 %".2")` -> `(ptr noalias, i64)`: a declaration names none."""
    return re.sub(r' %"[^"]*"| %[\w.]+', "", params)


def _groups(functions: list[_Function]) -> list[list[_Function]]:
    """Functions that stay in one part: a kernel with its outlined parallel bodies."""
    by_name: dict[str, list[_Function]] = {}
    order: list[str] = []
    for f in functions:
        owner = kernel_of(f.name)
        if owner not in by_name:
            by_name[owner] = []
            order.append(owner)
        by_name[owner].append(f)
    return [by_name[name] for name in order]


def split_module(text: str, parts: int) -> list[str]:
    """`text` (a whole module's LLVM IR) as up to `parts` modules that together define each
    function once (but for `_Function.copied` ones, defined in each part that calls them);
    largest groups first onto the least loaded part."""
    preamble, parsed = _parse(text)
    copied = {f.name: f for f in parsed if f.copied}
    functions = [f for f in parsed if not f.copied]
    loads = [0] * parts
    members: list[list[_Function]] = [[] for _ in range(parts)]
    for group in sorted(_groups(functions), key=lambda g: -sum(f.size for f in g)):
        target = loads.index(min(loads))
        members[target].extend(group)
        loads[target] += sum(f.size for f in group)
    members = [m for m in members if m]
    home = {f.name: index for index, m in enumerate(members) for f in m}
    exported = {name for index, m in enumerate(members) for f in m
                for name in f.references if name in home and home[name] != index}
    by_name = {f.name: f for f in functions}
    modules = []
    for index, m in enumerate(members):
        out = list(preamble)
        for name in sorted({name for f in m for name in f.references if name in copied}):
            out.extend(copied[name].lines)
            out.append("")
        for f in m:
            lines = list(f.lines)
            if f.name in exported and f.linkage:
                lines[0] = f.header.replace(f"define {f.linkage} ", "define ", 1)
            out.extend(lines)
            out.append("")
        needed = {name for f in m for name in f.references}
        for name in sorted(needed):
            if name in home and home[name] != index:
                out.append(f"declare {by_name[name].prototype}")
        modules.append("\n".join(out) + "\n")
    return modules


_Work = tuple[int, str, bool]
"""A module to compile: its place in submission order, its IR, strength reduction on."""


class _Lane(abc.ABC):
    """A code-generator that takes modules from its pool's queue whenever it is free, until
    it takes the end marker (`None`): a lane that happens to run slower (the thread, which
    shares its core with the emitter) then takes fewer, and no lane sits idle at the end
    while another has modules waiting. `result` gives {place: object} for what it
    compiled; `kill` gives up."""

    def __init__(self, work: queue.SimpleQueue[_Work | None]) -> None:
        self.work = work
        self.objects: dict[int, bytes] = {}

    @abc.abstractmethod
    def result(self) -> dict[int, bytes]: ...

    @abc.abstractmethod
    def kill(self) -> None: ...


def _start_worker_process() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "onnxc.runtime.codegen_worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


class SpareWorkers:
    """Worker processes started before the module they will compile exists: their start-up
    (an interpreter, llvmlite and LLVM's targets: about 0.2 s of CPU each) then runs while
    the compiler's own work, one Python thread, leaves the other cores idle, instead of
    during the emission, when every core is busy. A CodegenPool takes them (`take`); the
    ones it does not take end at `close`, or at the end of a `with` block (they stop at the
    end of their input)."""

    def __init__(self, count: int):
        _reap_ended()
        self._processes = [_start_worker_process() for _ in range(count)]
        weakref.finalize(self, _end_processes, self._processes)

    def take(self, count: int) -> list[subprocess.Popen[bytes]]:
        taken, self._processes[:] = self._processes[:count], self._processes[count:]
        return taken

    def close(self) -> None:
        _end_processes(self._processes)
        self._processes.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_ending: list[subprocess.Popen[bytes]] = []
"""Spare workers told to end and not yet reaped: `close` does not wait for them (one may
still be importing), and each new SpareWorkers reaps those that have ended."""


def _end_processes(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        for pipe in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]
    _ending.extend(processes)


def _reap_ended() -> None:
    _ending[:] = [process for process in _ending if process.poll() is None]


class _Worker(_Lane):
    """One code-generation process: a thread writes it the next module once the last one's
    object is back (one at a time, so that modules stay in the queue for whichever lane is
    free first), another reads the objects."""

    def __init__(self, work: queue.SimpleQueue[_Work | None], header: bytes,
                 process: subprocess.Popen[bytes] | None = None):
        super().__init__(work)
        self.process = process if process is not None else _start_worker_process()
        self._header = header
        self._places: list[int] = []
        """the places of the modules written to it, in order"""
        self._returned = threading.Semaphore(0)
        self._writer = threading.Thread(target=self._write, daemon=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._writer.start()
        self._reader.start()

    def _write(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(self._header + b"\n")
            stdin.flush()
            while (item := self.work.get()) is not None:
                place, text, strength_reduction = item
                data = text.encode()
                flags = b"" if strength_reduction else b" no-lsr"
                self._places.append(place)
                stdin.write(b"%d%s\n" % (len(data), flags) + data)
                stdin.flush()
                self._returned.acquire()  # released by the reader, also when the worker died
                if len(self.objects) < len(self._places):
                    break  # the worker died: its exit status says why
        except (BrokenPipeError, OSError):
            pass  # the worker died: its exit status says why
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while len(size := stdout.read(8)) == 8:
                place = self._places[len(self.objects)]
                self.objects[place] = stdout.read(struct.unpack("<Q", size)[0])
                self._returned.release()
        finally:
            self._returned.release()  # the writer is not left waiting for a dead worker

    def result(self) -> dict[int, bytes]:
        """Its objects, once it has compiled everything it took."""
        self._writer.join()
        self._reader.join()
        assert self.process.stderr is not None
        err = self.process.stderr.read()  # one line, or LLVM's assertion text
        self.process.wait()
        if self.process.returncode != 0:
            raise CompilationError(_failure(self.process.returncode,
                                            err.decode(errors="replace")))
        if len(self.objects) != len(self._places):
            raise CompilationError("a code generation worker ended before its last object")
        return self.objects

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()


LANE_SWITCH_INTERVAL = 0.0005
"""The interpreter's thread switch interval (seconds) while a thread lane runs. The lane
takes the GIL back after each of its twenty-odd LLVM calls per module, and with Python's
default of 5 ms it waited up to that long each time the main thread was emitting: BERT's
first chunk took 0.15 s to compile instead of 0.07 s."""

_switch_lock = threading.Lock()
_lanes_running = 0
_saved_switch_interval = 0.0


def _lane_started() -> None:
    global _lanes_running, _saved_switch_interval
    with _switch_lock:
        if _lanes_running == 0:
            _saved_switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_switch_interval, LANE_SWITCH_INTERVAL))
        _lanes_running += 1


def _lane_ended() -> None:
    global _lanes_running
    with _switch_lock:
        _lanes_running -= 1
        if _lanes_running == 0:
            sys.setswitchinterval(_saved_switch_interval)


class _ThreadLane(_Lane):
    """Code generation in a thread of this process (see the module docstring). Its modules
    are parsed into an LLVM context of its own, so they share nothing with the caller's,
    and its errors are raised by `result`. While it runs, the switch interval is
    LANE_SWITCH_INTERVAL."""

    def __init__(self, work: queue.SimpleQueue[_Work | None], target: Target,
                 opt_level: int):
        super().__init__(work)
        initialize_llvm()
        self._error: BaseException | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._compile, args=(target, opt_level),
                                        name="onnxc-codegen", daemon=True)
        self._thread.start()

    def _compile(self, target: Target, opt_level: int) -> None:
        import llvmlite.binding as llvm

        _lane_started()
        context = llvm.create_context()
        try:
            machine = target.create_target_machine(opt_level)
            while (item := self.work.get()) is not None:
                if self._stopped:
                    break
                place, text, strength_reduction = item
                self.objects[place] = compile_object(
                    text, machine, opt_level, strength_reduction=strength_reduction,
                    context=context)
        except BaseException as error:  # noqa: BLE001 - raised again by result()
            self._error = error
        finally:
            context.close()
            _lane_ended()

    def result(self) -> dict[int, bytes]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self._stopped:
            raise CompilationError("the code generation thread was stopped")
        return self.objects

    def kill(self) -> None:
        self._stopped = True  # the module being compiled finishes; it takes no other


class CodegenPool:
    """Lanes that compile modules while the caller produces more: `workers` processes (the
    `spare` ones first), and with `in_process` a thread of this process. Each module waits
    in one queue for the first lane that is free; `finish` collects the objects, in
    submission order."""

    def __init__(self, target: Target, opt_level: int, workers: int, *,
                 in_process: bool = False, spare: SpareWorkers | None = None):
        header = json.dumps({"triple": target.triple, "cpu": target.cpu,
                             "features": target.features, "opt_level": opt_level}).encode()
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._submitted = 0
        self._closed = False
        self._lanes: list[_Lane] = (
            [_ThreadLane(self._work, target, opt_level)] if in_process else [])
        started = spare.take(workers) if spare is not None else []
        self._lanes += [_Worker(self._work, header, process)
                        for process in started + [None] * (workers - len(started))]
        if not self._lanes:
            raise ValueError("a code generation pool needs a worker or the thread")
        # dropped without finish (the compile failed on the way): the lanes end at EOF
        weakref.finalize(self, _end_all, self._work, len(self._lanes))

    def submit(self, text: str, strength_reduction: bool = True) -> None:
        """Compile `text` on the first free lane; without `strength_reduction`, LLVM's loop
        strength reduction is off for it (lowering/to_llvm/direct.py plan_chunks says where
        it earns its time)."""
        self._work.put((self._submitted, text, strength_reduction))
        self._submitted += 1

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            _end_all(self._work, len(self._lanes))

    def finish(self) -> list[bytes]:
        self._close()
        objects: dict[int, bytes] = {}
        try:
            for lane in self._lanes:
                objects.update(lane.result())
        except CompilationError:
            self.abort()
            raise
        if len(objects) != self._submitted:
            raise CompilationError("a code generation lane ended before its last object")
        return [objects[place] for place in range(self._submitted)]

    def abort(self) -> None:
        """Stop every lane (a failed compile, or one given up)."""
        self._close()
        for lane in self._lanes:
            lane.kill()


def _end_all(work: queue.SimpleQueue[_Work | None], lanes: int) -> None:
    """An end marker for each lane, after whatever modules are queued."""
    for _ in range(lanes):
        work.put(None)


def compile_parts(parts: list[str], target: Target, opt_level: int) -> list[bytes]:
    """Each part's relocatable object, compiled in a worker process each, all at once."""
    pool = CodegenPool(target, opt_level, len(parts))
    for text in parts:
        pool.submit(text)
    return pool.finish()


def _failure(returncode: int, stderr: str) -> str:
    """A worker's error as the in-process compile would word it; a crash names its signal
    and LLVM's assertion line, if it printed one."""
    if returncode > 0:
        return stderr.strip() or f"the code generation worker exited with status {returncode}"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    assertion = [line for line in lines if "Assertion" in line]
    detail = (assertion or lines or [""])[-1]
    name = signal.Signals(-returncode).name
    return f"LLVM crashed ({name}) compiling the model's code" + (f": {detail}" if detail else "")


__all__ = ["PARALLEL_MIN_IR_BYTES", "CodegenPool", "SpareWorkers", "compile_parts",
           "split_module"]
