"""`onnxc-opt`: xDSL's modular optimizer driver with onnxc's dialects, passes and frontends.

It is `xdsl-opt` plus what users of `mlir-opt` reach for: `--pass-pipeline` in MLIR's nested
form, `--mlir-print-ir-{before,after}-all` and `--mlir-timing` on stderr, `--list-passes`,
ONNX inputs (`.onnx` binary, `.onnxtxt` text), `-t llvm` through onnxc's own translation,
and one-line `file:line:col: error:` reports with exit code 1 instead of tracebacks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from onnxc.errors import InternalCompilerError, ModelLoadError, OnnxcError
from onnxc.registry import ONNXC_DIALECTS, ONNXC_PASSES
from onnxc.tools import diagnostics
from onnxc.tools.instrument import PassInstrumentation, PassTimer
from onnxc.tools.pipeline_text import build_pipeline


class OnnxcDiagnostic(DiagnosticException):
    """An `OnnxcError` re-raised so that `--verify-diagnostics` prints it and goes on."""


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """`-t llvm`: LLVM IR text of a module in the `llvm` dialect, for `--compile-target` (default: this
    host); `-t 'llvm{triple=aarch64-unknown-linux-gnu}'` or `{data-layout="..."}` override it."""

    name = "llvm"
    triple: str | None = None
    data_layout: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from onnxc.lowering.to_llvm.translate import to_llvmlite

        if self.triple is None:
            from onnxc.runtime.target import current_target

            target = current_target()
            triple, data_layout = target.triple, target.data_layout
        else:
            triple, data_layout = self.triple, ""
        if self.data_layout is not None:
            data_layout = self.data_layout
        print(to_llvmlite(module, triple=triple, data_layout=data_layout), file=output)


def _pass_summary(factory: Any) -> str:
    """First docstring line of a pass class, or why it cannot be loaded."""
    try:
        cls = factory()
    except Exception as err:  # noqa: BLE001 - a pass still being written must not hide others
        return f"(unavailable: {type(err).__name__}: {err})"
    doc = cls.__dict__.get("__doc__") or ""
    if doc.startswith(f"{cls.__name__}("):  # the signature dataclasses put in __doc__
        return ""
    paragraph = diagnostics.one_line(doc.strip().split("\n\n")[0])
    return paragraph.split(". ")[0].removesuffix(".")


class _ListAction(argparse.Action):
    """Print a registry (`--list-passes`, `--show-dialects`) and exit, like `--version`."""

    def __init__(self, *args: Any, lines: Any, **kwargs: Any):
        super().__init__(*args, nargs=0, **kwargs)
        self.lines = lines

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print("\n".join(self.lines()))
        parser.exit()


class OnnxcOptMain(xDSLOptMain):
    """The `onnxc-opt` driver; see the module docstring for what it adds to `xdsl-opt`."""

    version_format = f"onnxc-opt {version('onnxc')} (xdsl {{xdsl_version}})"

    timer: PassTimer | None = None
    current_module: ModuleOp | None = None
    op_spans: dict[Operation, Span]

    def __init__(
        self,
        description: str = "onnxc modular optimizer driver",
        args: Sequence[str] | None = None,
    ):
        self.op_spans = {}
        self._chunk_offset = 0
        super().__init__(description, args)

    # ------------------------------------------------------------------ registries

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in ONNXC_DIALECTS.items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in ONNXC_PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        self.available_targets["llvm"] = lambda: LLVMIRTarget

    def register_all_frontends(self):
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            text = diagnostics.decode_source(io.read(), self.get_input_name(),
                                             self._chunk_offset)
            parser = diagnostics.LocatingParser(
                self.ctx, text, self.get_input_name(), self._chunk_offset
            )
            module = parser.parse_module(not self.args.no_implicit_module)
            self.op_spans.update(parser.op_spans)
            return module

        def import_binary(io: IO[bytes]) -> ModuleOp:
            from onnxc.frontend import import_onnx

            return import_onnx(io.read())

        def import_text(io: IO[bytes]) -> ModuleOp:
            from onnxc.frontend import import_onnx_text

            try:
                text = io.read().decode("utf-8")
            except UnicodeDecodeError as err:
                raise ModelLoadError(f"ONNX text input is not UTF-8: {err}") from None
            return import_onnx_text(text)

        self.available_frontends["mlir"] = parse_mlir
        self.available_frontends["onnx"] = import_binary
        self.available_frontends["onnxtxt"] = import_text

    # ------------------------------------------------------------------ arguments

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--pass-pipeline",
            metavar="PIPELINE",
            help="MLIR textual pipeline, e.g. 'builtin.module(func.func(cse),canonicalize)'; "
            "op anchors are flattened (every pass runs on the whole module)",
        )
        arg_parser.add_argument(
            "--list-passes",
            action=_ListAction,
            lines=self._pass_listing,
            help="print the registered passes and exit",
        )
        arg_parser.add_argument(
            "--show-dialects",
            action=_ListAction,
            lines=lambda: ["Available Dialects:", *sorted(self.ctx.registered_dialect_names)],
            help="print the registered dialects and exit",
        )
        for flag, doc in [
            ("--mlir-print-ir-before-all", "print the IR before every pass (stderr)"),
            ("--mlir-print-ir-after-all", "print the IR after every pass (stderr)"),
            ("--mlir-print-ir-after-change", "print the IR after every pass that changed it"),
        ]:
            arg_parser.add_argument(flag, action="store_true", help=doc)
        arg_parser.add_argument(
            "-O", dest="opt_level", type=int, choices=range(4), metavar="{0,1,2,3}",
            help="run the graph optimizations of a level (as onnxc.compile(opt_level=N)): "
            "-O0 none, -O1 basic, -O2 + extended, -O3 + layout and memory",
        )
        arg_parser.add_argument(
            "--print-pipeline", action="store_true",
            help="print the pipeline (of -O or -p/--pass-pipeline) as --pass-pipeline text "
            "and exit",
        )
        arg_parser.add_argument(
            "--stats", action="store_true",
            help="print node counts by op type before and after the passes, and how often "
            "each rewrite pattern fired (stderr)",
        )
        arg_parser.add_argument(
            "--verify-numerics", action="store_true",
            help="evaluate the graph on random inputs before the pipeline and after each "
            "pass (numpy); report the first pass that changes the results (exit code 1)",
        )
        arg_parser.add_argument(
            "--compile-target", default="host",
            help="what kernels and layouts are built for: host, a preset (x86-64-v2/v3/v4, "
            "aarch64, cortex-a76, neoverse-n1, neoverse-v1) or TRIPLE[:CPU[:FEATURES]]",
        )
        arg_parser.add_argument(
            "--mlir-timing", action="store_true",
            help="print a per-pass wall-time report to stderr (same as --time-passes)",
        )
        arg_parser.add_argument(
            "--mlir-print-op-generic", dest="print_op_generic", action="store_true",
            help="alias of --print-op-generic",
        )
        arg_parser.add_argument(
            "--mlir-print-debuginfo", dest="print_debuginfo", action="store_true",
            help="alias of --print-debuginfo",
        )

    def _pass_listing(self) -> list[str]:
        names = sorted(self.available_passes)
        width = max(map(len, names)) + 2
        rows = ["Available Passes:"]
        for name in names:
            summary = _pass_summary(self.available_passes[name])
            rows.append(f"  --{name:<{width}}{summary}".rstrip())
        return rows

    # ------------------------------------------------------------------ pipeline

    def setup_pipeline(self):
        """Build the pipeline from `-p` or `--pass-pipeline`, instrumented MLIR-style."""
        if self.args.pass_pipeline is not None and self.args.passes:
            raise OnnxcError("--pass-pipeline cannot be combined with -p/--passes")
        text = self.args.pass_pipeline if self.args.pass_pipeline is not None else self.args.passes
        if self.args.opt_level is not None:
            if text:
                raise OnnxcError("-O cannot be combined with -p/--passes or --pass-pipeline")
            from onnxc.passes.levels import graph_pipeline

            text = graph_pipeline(self.args.opt_level)
        self.pipeline_text = text
        if self.args.mlir_timing or self.args.time_passes:
            self.timer = PassTimer()
        instrumentation = PassInstrumentation(
            verify=not self.args.disable_verify,
            print_before_all=self.args.mlir_print_ir_before_all,
            print_after_all=self.args.mlir_print_ir_after_all,
            print_after_change=self.args.mlir_print_ir_after_change,
            print_generic=self.args.print_op_generic,
            print_between_passes=self.args.print_between_passes,
            timer=self.timer,
        )
        self.pipeline = build_pipeline(text, self.available_passes, instrumentation)

    # ------------------------------------------------------------------ running

    def prepare_input(self):
        if self.args.frontend:
            extension = self.args.frontend
        elif self.args.input_file is None:
            extension = "mlir"
        else:
            extension = os.path.splitext(self.args.input_file)[1].removeprefix(".")
        if extension not in self.available_frontends:
            known = ", ".join(sorted(self.available_frontends))
            raise OnnxcError(
                f"unrecognized input extension '.{extension}'; choose a frontend with "
                f"-f/--frontend ({known})"
            )
        return super().prepare_input()

    def _timed(self, title: str, fn: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            if self.timer is not None:
                self.timer.add(title, time.perf_counter() - started)

    def _as_diagnostic(self, fn: Any, *args: Any) -> Any:
        """Run fn; under --verify-diagnostics an OnnxcError is printed and the next chunk runs."""
        try:
            return fn(*args)
        except OnnxcError as err:
            if self.args.verify_diagnostics:
                raise OnnxcDiagnostic(f"{type(err).__name__}: {err}") from err
            raise

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        self._chunk_offset = start_offset
        self.current_module = None
        parse = super().parse_chunk
        module = self._timed("Parser", self._as_diagnostic, parse, chunk, file_extension)
        self.current_module = module
        return module

    def apply_passes(self, prog: ModuleOp):
        from onnxc.passes.base import STATISTICS
        from onnxc.passes.stats import OptimizationStats, op_counts

        before = op_counts(prog) if self.args.stats else None
        STATISTICS.reset()
        if self.args.verify_numerics:
            self._as_diagnostic(self._verify_numerics, prog)
        else:
            self._as_diagnostic(super().apply_passes, prog)
        if before is not None:
            stats = OptimizationStats(before, op_counts(prog), STATISTICS.snapshot())
            print(stats, file=sys.stderr)

    def _verify_numerics(self, prog: ModuleOp) -> None:
        """--verify-numerics: run the pipeline pass by pass under the numpy evaluator."""
        from onnxc.passes.verify_numerics import NumericDriftError, bisect_pipeline
        from onnxc.tools.pipeline_text import split_pipeline

        report = bisect_pipeline(prog, split_pipeline(self.pipeline_text))
        print(report, file=sys.stderr)
        if not report.ok:
            raise NumericDriftError(report)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        return self._timed("Output", super().output_resulting_program, prog)

    def run(self):
        if self.args.print_pipeline:
            from onnxc.tools.pipeline_text import flatten_pipeline

            print(flatten_pipeline(self.pipeline_text))
            return
        from onnxc.runtime.target import compiling_for, parse_target

        with compiling_for(parse_target(self.args.compile_target)):
            super().run()
        if self.timer is not None:
            self.timer.report(sys.stderr)

    def describe(self, err: BaseException) -> str:
        """The one-line report of err, located at the failing op when it is a verifier error."""
        if isinstance(err, VerifyException) and self.current_module is not None:
            found = diagnostics.locate_verify_failure(self.current_module, self.op_spans)
            if found is not None:
                location, message = found
                return diagnostics.error_line(message, location)
        if isinstance(err, InternalCompilerError) and err.op is not None:
            # a pass broke an op of the input: point at it (ops a pass created have no span)
            location = diagnostics.op_location(err.op, self.op_spans)
            return diagnostics.error_line(diagnostics.one_line(str(err)), location)
        return diagnostics.describe(err)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: 0 on success, 1 with one `error:` line on stderr otherwise."""
    tool: OnnxcOptMain | None = None
    try:
        tool = OnnxcOptMain(args=argv)
        tool.run()
    except BrokenPipeError:  # `onnxc-opt --list-passes | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (Exception, ArgSpecParseError) as err:
        if diagnostics.debug_enabled():
            raise
        report = tool.describe(err) if tool is not None else diagnostics.describe(err)
        sys.stdout.flush()
        print(report, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
