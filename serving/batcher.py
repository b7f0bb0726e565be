"""The dynamic batcher: requests to one model version queue here and run in batches.

Triton's dynamic batcher (core/src/dynamic_batch_scheduler.cc, GetDynamicBatch), on one
asyncio loop: a batch is formed only when a worker is free (the executor's threads, one per
model instance), scanning the queue in arrival order and counting each request's own batch
size. It is dispatched at once when it reaches a preferred size (the largest one reachable),
the largest preferred size (max_batch_size when none is configured), or when the next request
would not fit in max_batch_size; otherwise when the oldest queued request has waited
max_queue_delay_us, so no request waits past its delay for a batch to fill (plus the loop's
timer slack: 0.2-0.6 ms median, a few ms at p99 on a busy 2-core machine); with a delay of 0
whatever is queued goes at once. While every worker is busy requests wait for one (as in
Triton), and the batch then formed takes what queued meanwhile. Requests are never reordered.

A batch whose run raises is run again one request at a time, so one request that fails a
run-time check in the model fails alone, with onnxc's message, and the others get their
answers. `on_batch` hears what each batch did (statistics.ModelStatistics.record_batch).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from onnxc.errors import OnnxcError
from onnxc.serving.batch_execution import BatchExecutor, ExecutionTiming
from onnxc.serving.errors import ServingError

_log = logging.getLogger("onnxc.serving")

Inputs = dict[str, np.ndarray]
Execute = Callable[[list[Inputs]], list[Inputs]]


@dataclass(frozen=True)
class BatchTiming:
    """What one dispatched batch did, for the statistics (one entry per request, in order)."""

    batch_sizes: tuple[int, ...]
    """each request's own batch size"""
    queue_ns: tuple[int, ...]
    """each request's wait from submit until a worker started its batch"""
    errors: tuple[ServingError | None, ...]
    """each request's error (None: answered)"""
    executions: tuple[ExecutionTiming, ...]
    """the model runs that succeeded, each naming the requests it answered (indices here)"""


@dataclass
class _Queued:
    inputs: Inputs
    batch_size: int
    future: asyncio.Future
    enqueued_ns: int


def serving_error(error: BaseException, name: str) -> ServingError:
    """The ServingError a failed run answers: onnxc's own errors (a wrong input, a run-time
    check in the model) are the client's, INVALID_ARGUMENT; anything else is a bug, INTERNAL.
    Marked with Triton's failure reason BACKEND (statistics.failure_reason)."""
    if not isinstance(error, ServingError):
        if isinstance(error, OnnxcError):
            error = ServingError.invalid(f"{name}: {error}")
        else:
            error = ServingError("INTERNAL", f"{name}: {type(error).__name__}: {error}")
        error.failure_reason = "BACKEND"
    return error


def _refused(message: str, reason: str) -> ServingError:
    """UNAVAILABLE, marked with Triton's failure reason (REJECTED, CANCELED)."""
    error = ServingError.unavailable(message)
    error.failure_reason = reason
    return error


def _workers(executor: concurrent.futures.Executor) -> int:
    """How many batches `executor` runs at once (a ThreadPoolExecutor's max_workers)."""
    return max(1, int(getattr(executor, "_max_workers", 1)))


class DynamicBatcher:
    """One model version's request queue and the batches it runs (see the module docstring).

    `execute` takes per-request input dicts and returns per-request output dicts (one
    batch_execution.BatchExecutor, or any such callable); it runs in `executor`, up to
    `max_concurrent_batches` batches at once (default: the executor's worker count).
    `max_batch_size` 0: the model does not batch, each request runs alone. `max_queue_size`
    0: unbounded (Triton's default). `name` appears in every error message."""

    def __init__(self, execute: Execute, *, max_batch_size: int,
                 preferred_batch_sizes: Sequence[int] = (), max_queue_delay_us: int = 0,
                 max_queue_size: int = 1024, executor: concurrent.futures.Executor,
                 on_batch: Callable[[BatchTiming], None] | None = None,
                 max_concurrent_batches: int | None = None, name: str = "model"):
        if max_batch_size < 0 or max_queue_delay_us < 0 or max_queue_size < 0:
            raise ValueError("max_batch_size, max_queue_delay_us and max_queue_size are >= 0")
        preferred = sorted({int(size) for size in preferred_batch_sizes})
        if max_batch_size and any(not 0 < size <= max_batch_size for size in preferred):
            raise ValueError(f"{name}: preferred batch sizes {preferred} must lie in "
                             f"1..max_batch_size ({max_batch_size})")
        self.name = name
        self.max_batch_size = max_batch_size
        self.preferred_batch_sizes = frozenset(preferred) if max_batch_size else frozenset()
        self._max_preferred = max(preferred) if preferred and max_batch_size else max_batch_size
        self.max_queue_delay_ns = max_queue_delay_us * 1000
        self.max_queue_size = max_queue_size
        self._execute = execute
        self._executor = executor
        self._on_batch = on_batch
        self._slots_total = max_concurrent_batches or _workers(executor)
        self._queue: collections.deque[_Queued] = collections.deque()
        self._closed = False
        self._drain = True
        self._arrived: asyncio.Event | None = None
        self._slots: asyncio.Semaphore | None = None
        self._scheduler: asyncio.Task | None = None
        self._running: set[asyncio.Task] = set()

    @property
    def queued(self) -> int:
        """Requests waiting for a batch (Triton's pending request count)."""
        return len(self._queue)

    async def submit(self, inputs: Inputs, batch_size: int) -> Inputs:
        """Queue one request and wait for its outputs. ServingError: UNAVAILABLE when the
        queue is full or the batcher closed, INVALID_ARGUMENT when the request is larger than
        max_batch_size or its run fails in the model."""
        if self._closed:
            raise _refused(f"{self.name} is shutting down: request refused", "REJECTED")
        if self.max_queue_size and len(self._queue) >= self.max_queue_size:
            raise _refused(
                f"{self.name}: the request queue is full ({self.max_queue_size} requests "
                "waiting, dynamic_batching.default_queue_policy.max_queue_size)", "REJECTED")
        if self.max_batch_size and batch_size > self.max_batch_size:
            raise ServingError.invalid(
                f"{self.name}: batch size {batch_size} exceeds max_batch_size "
                f"{self.max_batch_size}")
        self._start()
        future = asyncio.get_running_loop().create_future()
        self._queue.append(_Queued(inputs, max(1, int(batch_size)), future,
                                   time.monotonic_ns()))
        self._arrived.set()
        return await future

    def _start(self) -> None:
        if self._scheduler is None:  # made on the loop that serves the first request
            self._arrived = asyncio.Event()
            self._slots = asyncio.Semaphore(self._slots_total)
            self._scheduler = asyncio.get_running_loop().create_task(self._schedule())

    async def close(self, drain: bool = True) -> None:
        """Refuse new requests; with `drain` run everything queued (at once, without waiting
        for delays), else fail it UNAVAILABLE; return when every batch has finished."""
        self._closed, self._drain = True, drain
        if not drain:
            while self._queue:
                entry = self._queue.popleft()
                if not entry.future.done():
                    entry.future.set_exception(_refused(
                        f"{self.name} was unloaded before the request ran", "CANCELED"))
        if self._scheduler is not None:
            self._arrived.set()
            await self._scheduler
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def _schedule(self) -> None:
        """Form batches while a worker is free, until closed and empty."""
        try:
            await self._dispatch_batches()
        except BaseException as error:  # a bug here must not leave callers waiting forever
            _log.exception("%s: the batch scheduler stopped", self.name)
            self._closed = True
            while self._queue:
                entry = self._queue.popleft()
                if not entry.future.done():
                    entry.future.set_exception(serving_error(error, self.name))
            raise

    async def _dispatch_batches(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()
            batch = await self._next_batch()
            if batch is None:
                self._slots.release()
                return
            task = loop.create_task(self._run(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _next_batch(self) -> list[_Queued] | None:
        """The next batch to dispatch, waiting as GetDynamicBatch says (None: closed, empty)."""
        while True:
            while self._queue and self._queue[0].future.done():  # its caller went away
                self._queue.popleft()
            if not self._queue:
                if self._closed:
                    return None
                self._arrived.clear()
                await self._arrived.wait()
                continue
            count, wait_ns = self._decide(time.monotonic_ns())
            if count:  # without the requests abandoned meanwhile (a client went away)
                taken = [self._queue.popleft() for _ in range(count)]
                return [entry for entry in taken if not entry.future.done()]
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), wait_ns / 1e9)
            except asyncio.TimeoutError:  # the builtin TimeoutError only from Python 3.11
                pass

    def _decide(self, now_ns: int) -> tuple[int, int]:
        """(requests to dispatch from the queue's head, 0) or (0, ns to wait first)."""
        if not self.max_batch_size:
            return 1, 0
        pending = count = 0
        best = 0  # requests in the best batch found: a preferred size, or the largest
        send_now = False
        for entry in self._queue:
            if entry.future.done():  # abandoned: taken with the batch, then dropped
                count += 1
                continue
            size = entry.batch_size
            if pending:
                if pending + size > self._max_preferred and not best:
                    best = count
                if pending + size > self.max_batch_size:
                    send_now = True
                    break
            pending += size
            count += 1
            if pending in self.preferred_batch_sizes:
                best = count
        waited = now_ns - self._queue[0].enqueued_ns
        expired = self.max_queue_delay_ns == 0 or waited >= self.max_queue_delay_ns
        if self._closed and self._drain:
            expired = True
        if best and not expired:
            return best, 0
        if send_now or pending >= self._max_preferred or expired:
            return max(count, 1), 0
        return 0, self.max_queue_delay_ns - waited

    async def _run(self, batch: list[_Queued]) -> None:
        """Run one batch in the executor, answer each request, report the timing."""
        try:
            dispatched = [time.monotonic_ns()]
            inputs = [entry.inputs for entry in batch]
            loop = asyncio.get_running_loop()

            def first_run():  # the queue ends when a worker starts the batch (Triton's)
                dispatched[0] = time.monotonic_ns()
                return run_timed(self._execute, inputs)

            try:
                results, executions = await loop.run_in_executor(self._executor, first_run)
                if len(results) != len(batch):
                    raise RuntimeError(f"the batch's execute answered {len(results)} "
                                       f"requests of {len(batch)}")
                answers: list = list(results)
            except Exception as error:  # noqa: BLE001 - each request is answered below
                if len(batch) == 1:
                    answers, executions = [serving_error(error, self.name)], []
                else:
                    answers, executions = await loop.run_in_executor(
                        self._executor, run_one_by_one, self._execute, inputs, self.name)
            errors = tuple(a if isinstance(a, ServingError) else None for a in answers)
            for entry, answer in zip(batch, answers):
                if entry.future.done():
                    continue
                if isinstance(answer, ServingError):
                    entry.future.set_exception(answer)
                else:
                    entry.future.set_result(answer)
            if self._on_batch is not None:
                timing = BatchTiming(
                    tuple(e.batch_size for e in batch),
                    tuple(dispatched[0] - e.enqueued_ns for e in batch), errors,
                    tuple(executions))
                try:
                    self._on_batch(timing)
                except Exception:  # noqa: BLE001 - statistics must never fail a request
                    _log.exception("%s: recording a batch's statistics failed", self.name)
        except BaseException as error:
            for entry in batch:
                if not entry.future.done():
                    entry.future.set_exception(serving_error(error, self.name))
            raise
        finally:
            self._slots.release()


def run_timed(execute: Execute, inputs: list[Inputs]
              ) -> tuple[list[Inputs], list[ExecutionTiming]]:
    """Run a batch; its executions' phases (shared with the Ray engine's replicas) (a BatchExecutor measures its own, another
    callable counts as one run whose time is all compute_infer)."""
    if isinstance(execute, BatchExecutor):
        return execute.timed(inputs)
    start = time.perf_counter_ns()
    results = execute(inputs)
    return results, [ExecutionTiming(tuple(range(len(inputs))), 0,
                                     time.perf_counter_ns() - start, 0)]


def run_one_by_one(execute: Execute, inputs: list[Inputs], name: str
                   ) -> tuple[list, list[ExecutionTiming]]:
    """Each request run alone after its batch failed: its outputs or its own ServingError."""
    answers: list = []
    executions: list[ExecutionTiming] = []
    for index, request in enumerate(inputs):
        try:
            (result,), (execution,) = run_timed(execute, [request])
        except Exception as error:  # noqa: BLE001 - this request's answer
            answers.append(serving_error(error, name))
            continue
        answers.append(result)
        executions.append(ExecutionTiming((index,), execution.compute_input_ns,
                                          execution.compute_infer_ns,
                                          execution.compute_output_ns))
    return answers, executions
