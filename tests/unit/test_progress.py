"""The progress line of long compiles (onnxc.progress): shown only on a terminal, only after
its delay, cleared at the end, never with quiet=True, and no thread left behind.

The display takes its stream, delay and clock as parameters: the tests drive a fake clock
and call `tick()` (the thread's step) themselves, so none of them waits a second.
"""

from __future__ import annotations

import io
import threading
import time

import pytest

import onnxc
from onnxc.errors import InvalidArgumentError, UnsupportedOpError
from onnxc.progress import CompileProgress
from onnxc.zoo_micro import matmul_model


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "onnxc-progress"]


def test_nothing_before_the_delay_then_stage_and_elapsed_time():
    stream, clock = FakeTerminal(), FakeClock()
    progress = CompileProgress(stream, delay=1.0, clock=clock)
    progress.active = True  # drive it by hand: no thread
    progress.stage("import")
    clock.now += 0.9
    progress.tick()
    assert stream.getvalue() == ""
    clock.now += 0.3
    progress.tick()
    assert stream.getvalue() == "\ronnxc: importing the ONNX model  1.2 s"
    clock.now += 2.0
    progress.stage("graph-to-loops")  # redrawn at once while showing
    assert stream.getvalue().split("\r")[-1].rstrip() == "onnxc: lowering to loops  3.2 s"
    progress.close()
    assert stream.getvalue().split("\r")[-2:] == [" " * len("onnxc: lowering to loops  3.2 s"), ""]


def test_unknown_stage_names_are_shown_as_named():
    stream, clock = FakeTerminal(), FakeClock()
    progress = CompileProgress(stream, delay=0.0, clock=clock)
    progress.stage("custom-step")
    progress.tick()
    progress.close()
    assert "onnxc: custom-step  0.0 s" in stream.getvalue()


def test_messages_print_above_the_line():
    stream, clock = FakeTerminal(), FakeClock()
    progress = CompileProgress(stream, delay=0.0, clock=clock)
    progress.message("[onnxc] before: 1.0 ms")  # no line yet: plain
    progress.stage("llvm-jit")
    progress.tick()
    progress.message("[onnxc] llvm-jit: 2.0 ms")
    progress.close()
    text = stream.getvalue()
    assert text.startswith("[onnxc] before: 1.0 ms\n")
    assert "[onnxc] llvm-jit: 2.0 ms\n\ronnxc: generating machine code (LLVM)" in text


def test_the_thread_draws_after_the_delay_and_is_joined_by_close():
    stream = FakeTerminal()
    progress = CompileProgress(stream, delay=0.05, interval=0.01).start()
    progress.stage("graph-opt")
    assert _progress_threads()
    deadline = time.monotonic() + 10
    while "optimizing the graph" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    progress.close()
    assert "onnxc: optimizing the graph" in stream.getvalue()
    assert not _progress_threads()


def test_silent_and_threadless_when_not_a_terminal():
    stream, clock = io.StringIO(), FakeClock()
    progress = CompileProgress(stream, delay=0.0, clock=clock).start()
    assert not progress.active and not _progress_threads()
    progress.stage("import")
    clock.now += 5
    progress.tick()
    progress.close()
    assert stream.getvalue() == ""


@pytest.fixture
def terminal_stderr(monkeypatch):
    """Compiles' progress lines on a fake terminal (in place of stderr, which pytest's
    capture would swap back), appearing at once (no 1 s wait)."""
    stream = FakeTerminal()
    init = CompileProgress.__init__

    def immediate(self, *args, **kwargs):
        init(self, *args, **{**kwargs, "stream": stream, "delay": 0.0, "interval": 0.005})

    monkeypatch.setattr(CompileProgress, "__init__", immediate)
    return stream


def test_compile_shows_its_stages_on_a_terminal(terminal_stderr, tmp_path):
    compiled = onnxc.compile(matmul_model(8), cache_dir=tmp_path)
    assert compiled.run(None, {"a": _eye(), "b": _eye()})[0].trace() == 8
    text = terminal_stderr.getvalue()
    assert "onnxc: " in text and text.endswith("\r")  # drawn, then cleared
    assert not _progress_threads()


def test_quiet_compile_prints_nothing_and_is_the_same_cache_entry(terminal_stderr, tmp_path):
    onnxc.compile(matmul_model(8), cache_dir=tmp_path, quiet=True)
    assert terminal_stderr.getvalue() == ""
    again = onnxc.compile(matmul_model(8), cache_dir=tmp_path)  # quiet is not in the key
    assert again.from_cache
    assert "onnxc: looking up the compile cache" in terminal_stderr.getvalue()


def test_no_thread_left_after_a_compile_that_raises(terminal_stderr, monkeypatch):
    def import_fails_while_shown(model):  # the import stage fails with the line showing
        deadline = time.monotonic() + 10
        while "importing" not in terminal_stderr.getvalue() and time.monotonic() < deadline:
            time.sleep(0.005)
        raise UnsupportedOpError("NoSuchOp", "n0", 17)

    monkeypatch.setattr("onnxc.pipeline.import_onnx", import_fails_while_shown)
    with pytest.raises(UnsupportedOpError):
        onnxc.compile(matmul_model(8), cache_dir=False)
    assert not _progress_threads()
    text = terminal_stderr.getvalue()
    assert "onnxc: importing the ONNX model" in text and text.endswith("\r")  # cleared


def test_quiet_must_be_a_bool():
    with pytest.raises(InvalidArgumentError, match="quiet must be True or False"):
        onnxc.compile(matmul_model(8), quiet="yes")


def _eye():
    import numpy as np

    return np.eye(8, dtype=np.float32)
