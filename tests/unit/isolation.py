"""Running a test case in a forked child, so that a crash (SIGSEGV, SIGFPE, abort) or a hang
fails that one case instead of taking the test session down, and is reported as what it was.

The child is forked from the test process (onnxc already imported, so a case costs its own
work, not a Python start-up); what it returns or raises comes back pickled. Import it as
`from tests.unit.isolation import Outcome, isolated` (pytest's importlib mode makes `tests.unit`
a namespace package).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TIMEOUT = 120.0
"""Seconds a case may take before its child is killed (and the case fails as a hang)."""


@dataclass
class Outcome:
    """How a case ended in its own process: a value, a typed error, or a crash."""

    value: Any = None
    error: str | None = None
    """the exception's class name"""
    message: str = ""
    crash: str | None = None
    """the signal or exit status that killed the process"""

    def raised(self, kind: type[BaseException], *fragments: str) -> None:
        assert self.crash is None, f"crashed: {self.crash}"
        assert self.error == kind.__name__, f"expected {kind.__name__}, got {self}"
        for fragment in fragments:
            assert fragment in self.message, f"{fragment!r} not in {self.message!r}"

    def returned(self) -> Any:
        assert self.crash is None, f"crashed: {self.crash}"
        assert self.error is None, f"raised {self.error}: {self.message}"
        return self.value


def isolated(case: Callable[[], Any]) -> Outcome:
    """Run `case()` in a forked child; its result, its exception, or how it died."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            try:
                result = Outcome(value=case())
            except BaseException as error:  # noqa: BLE001 - reported to the parent
                result = Outcome(error=type(error).__name__, message=str(error))
            data = pickle.dumps(result)
        except BaseException as error:  # noqa: BLE001 - an unpicklable value
            data = pickle.dumps(Outcome(error=type(error).__name__, message=str(error)))
        with os.fdopen(write, "wb") as pipe:
            pipe.write(data)
        os._exit(0)
    os.close(write)
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        while True:
            ready, _, _ = select.select([pipe], [], [], TIMEOUT)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Outcome(crash=f"no answer within {TIMEOUT} s (killed)")
            chunk = os.read(pipe.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return Outcome(crash=signal.Signals(os.WTERMSIG(status)).name)
    if os.WEXITSTATUS(status) != 0 or not chunks:
        return Outcome(crash=f"exit status {os.WEXITSTATUS(status)}")
    return pickle.loads(b"".join(chunks))
