"""Pass instrumentation for `onnxc-opt`: MLIR-style IR dumps and the timing report.

xDSL's `--print-between-passes` and `--time-passes` write to stdout, between the IR that
`| filecheck` reads. MLIR writes both to stderr, in formats users know by sight; this module
reproduces those formats as a `PassPipeline` callback.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from onnxc.tools.ir_printer import module_text


def pass_title(p: ModulePass) -> str:
    """`CanonicalizePass (canonicalize)`, like MLIR's `Canonicalizer (canonicalize)`."""
    return f"{type(p).__name__} ({p.name})"


@dataclass
class PassTimer:
    """Wall time per phase, accumulated over all `--split-input-file` chunks."""

    rows: dict[str, float] = field(default_factory=dict)
    """Phase title -> seconds, in first-seen order (Python dicts keep insertion order)."""

    def add(self, title: str, seconds: float) -> None:
        self.rows[title] = self.rows.get(title, 0.0) + seconds

    def report(self, stream: IO[str]) -> None:
        """MLIR's `--mlir-timing` list report."""
        total = sum(self.rows.values())
        bar = "===" + "-" * 73 + "==="
        print(bar, file=stream)
        print("... Execution time report ...".center(len(bar)).rstrip(), file=stream)
        print(bar, file=stream)
        print(f"  Total Execution Time: {total:.4f} seconds\n", file=stream)
        print("  ----Wall Time----  ----Name----", file=stream)
        for title, seconds in [*self.rows.items(), ("Total", total)]:
            share = 100.0 * seconds / total if total else 0.0
            print(f"  {seconds:8.4f} ({share:5.1f}%)  {title}", file=stream)
        stream.flush()


@dataclass
class PassInstrumentation:
    """The `PassPipeline` callback: verify, dump and time around every pass."""

    verify: bool = True
    print_before_all: bool = False
    print_after_all: bool = False
    print_after_change: bool = False
    print_before: frozenset[str] = frozenset()
    """Names of the passes to print the IR before (`--mlir-print-ir-before=cse,dce`)."""
    print_after: frozenset[str] = frozenset()
    print_generic: bool = False
    print_debuginfo: bool = False
    elide_larger: int | None = None
    """`--mlir-elide-elementsattrs-if-larger`: dense constants above this many elements
    are printed elided in the dumps too."""
    print_between_passes: bool = False
    """xDSL's own flag, kept as xDSL defines it (stdout)."""
    timer: PassTimer | None = None
    stream: IO[str] = field(default_factory=lambda: sys.stderr)
    _started: float = 0.0
    _before_text: str | None = None

    def _text(self, module: ModuleOp) -> str:
        return module_text(module, generic=self.print_generic, debuginfo=self.print_debuginfo,
                           elide_larger=self.elide_larger)

    def _dump(self, header: str, text: str) -> None:
        self.stream.write(f"// -----// IR Dump {header} //----- //\n{text}\n\n")
        self.stream.flush()

    def __call__(
        self, previous: ModulePass | None, module: ModuleOp, upcoming: ModulePass | None
    ) -> None:
        now = time.perf_counter()
        if previous is not None and self.timer is not None:
            self.timer.add(pass_title(previous), now - self._started)
        if previous is not None:
            if self.print_after_all or previous.name in self.print_after:
                self._dump(f"After {pass_title(previous)}", self._text(module))
            elif self.print_after_change:
                text = self._text(module)
                if text != self._before_text:
                    self._dump(f"After {pass_title(previous)}", text)
            if self.print_between_passes and upcoming is not None:
                print(f"IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
        if self.verify:
            started = time.perf_counter()
            if previous is None:
                module.verify()  # the input: its errors are located in the source text
            else:
                from onnxc.pass_manager.verifier import verify_after

                verify_after(module, previous.name)  # InternalCompilerError naming the pass
            if self.timer is not None:
                self.timer.add("Verifier", time.perf_counter() - started)
        if upcoming is not None:
            if self.print_before_all or upcoming.name in self.print_before:
                self._dump(f"Before {pass_title(upcoming)}", self._text(module))
            if self.print_after_change:
                self._before_text = self._text(module)
            self._started = time.perf_counter()
