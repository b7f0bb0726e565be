"""The progress line of a long compile: `onnxc: lowering to loops  3.2 s` on a terminal.

A cold compile of ResNet-50 takes 10-20 s with nothing on screen, which looks like a hang.
When stderr is a terminal, `onnxc.compile` shows the current stage and the time since the
compile began on one line, redrawn in place, and clears it when the compile returns or
raises. It appears only after `delay` seconds (1 s), so quick compiles and cache hits print
nothing. A background thread draws it, because a single stage (LLVM on a large model) can
take seconds with no stage transition to hook; the thread is joined before `close` returns,
so none outlives the compile. Not a terminal, or `quiet=True`: no thread, no output.

tqdm draws the line (it fits it to the terminal's width, so a narrow window does not wrap
it and break the in-place redraw); it is imported only when the line first appears, and is
lighter to import than rich (about 60 ms against 150 ms).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, ClassVar

STAGE_DESCRIPTIONS = {
    "cache-lookup": "looking up the compile cache",
    "import": "importing the ONNX model",
    "graph-opt": "optimizing the graph",
    "graph-to-loops": "lowering to loops",
    "loops-to-llvm": "lowering to LLVM IR",
    "llvm-jit": "generating machine code (LLVM)",
    "cache-store": "storing in the compile cache",
    "artifact": "building the artifact (C compiler)",
}
"""What the user reads for each stage name of compilation.StageLog (others are shown as named)."""


def is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


class CompileProgress:
    """The progress line of one compile. `start()` it, call `stage(name)` at each stage,
    `close()` it at the end (or use it as a context manager); inactive unless `stream` is a
    terminal. `delay` (seconds before the line appears), `interval` (seconds between
    redraws) and `clock` are parameters so that tests need not wait."""

    def __init__(self, stream: IO[str] | None = None, *, delay: float = 1.0,
                 interval: float = 0.1, clock: Callable[[], float] = time.monotonic):
        self.stream = sys.stderr if stream is None else stream
        self.delay, self.interval, self.clock = delay, interval, clock
        self.active = is_terminal(self.stream)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = clock()
        self._stage = "starting"
        self._line: Any = None  # the tqdm line, once shown

    def start(self) -> CompileProgress:
        """Start the clock and, on a terminal, the thread that draws the line."""
        self._started = self.clock()
        if self.active and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="onnxc-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def stage(self, name: str) -> None:
        """The compile entered stage `name` (redrawn at once if the line is showing)."""
        with self._lock:
            self._stage = name
            if self._line is not None:
                self._draw()

    def tick(self) -> None:
        """Draw the line if the compile has run for `delay` seconds (the thread's step)."""
        with self._lock:
            if self.active and not self._stop.is_set() \
                    and self.clock() - self._started >= self.delay:
                self._draw()

    def message(self, text: str) -> None:
        """Print a line of text (the verbose stage log) above the progress line."""
        with self._lock:
            if self._line is None:
                print(text, file=self.stream)
                return
            self._line.clear()
            print(text, file=self.stream)
            self._draw()

    def close(self) -> None:
        """Stop the thread (joined) and clear the line; idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._line is not None:
                self._line.close()  # leave=False: erases the line
                self._line = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def text(self) -> str:
        """What the line says now."""
        seconds = self.clock() - self._started
        return f"onnxc: {STAGE_DESCRIPTIONS.get(self._stage, self._stage)}  {seconds:.1f} s"

    def _run(self) -> None:
        if self._stop.wait(max(0.0, self.delay - (self.clock() - self._started))):
            return
        while True:
            self.tick()
            if self._stop.wait(self.interval):
                return

    def _draw(self) -> None:
        """Show or update the line (the caller holds the lock)."""
        if self._line is None:
            self._line = _open_line(self.stream, self.text())
        else:
            self._line.set_description_str(self.text(), refresh=True)


def _open_line(stream: IO[str], text: str) -> Any:
    """A tqdm status line on `stream`: no bar, no counter, only our text."""
    # a terminal that reports no size (a pty nobody sized) would make tqdm print nothing
    fit = {"dynamic_ncols": True} if min(_size(stream)) > 0 else \
        {"ncols": 1 << 16, "nrows": 1 << 16}
    return _status_line_class()(file=stream, desc=text, bar_format="{desc}", leave=False,
                                position=0, mininterval=0, disable=False, **fit)


@functools.cache
def _status_line_class() -> type:
    """tqdm, without its monitor thread (it would outlive the compile), with a thread lock
    instead of its default multiprocessing one, and apart from other tqdm bars (whose
    count would move our line down)."""
    from weakref import WeakSet

    from tqdm import tqdm

    class StatusLine(tqdm):
        monitor_interval = 0
        _lock = threading.RLock()
        _instances: ClassVar[WeakSet] = WeakSet()  # tqdm counts its bars in it

    return StatusLine


def _size(stream: IO[str]) -> tuple[int, int]:
    """(columns, lines) of the terminal `stream` writes to; (0, 0) when it has no size."""
    try:
        return tuple(os.get_terminal_size(stream.fileno()))
    except (AttributeError, OSError, ValueError):  # no file descriptor (a test's stream)
        return 0, 0
