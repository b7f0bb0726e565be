"""`onnxc-opt`: xDSL's modular optimizer driver with onnxc's dialects, passes and frontends.

It is `xdsl-opt` plus what users of `mlir-opt` reach for: `--pass-pipeline` in MLIR's nested
form, `--mlir-print-ir-{before,after}[-all]` and `--mlir-timing` on stderr, `--list-passes`,
ONNX inputs (`.onnx` binary, `.onnxtxt` text, `--input-shapes`), `--emit=STAGE` down to object
code (tools/emit.py), `-t llvm` through onnxc's own translation, elided weights
(tools/ir_printer.py), and one-line `file:line:col: error:` reports with exit code 1 instead
of tracebacks, for every failing `--split-input-file` chunk.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib.metadata import version
from io import StringIO
from typing import IO, TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.utils.lexer import Span
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from onnxc.errors import InternalCompilerError, InvalidArgumentError, ModelLoadError, OnnxcError
from onnxc.pass_manager.pipeline_text import (
    UnknownPassError,
    build_pipeline,
    nested_pipeline,
    split_pipeline,
)
from onnxc.registry import ONNXC_DIALECTS, ONNXC_PASSES
from onnxc.tools import diagnostics, emit
from onnxc.tools.instrument import PassInstrumentation, PassTimer
from onnxc.tools.ir_printer import module_text
from onnxc.tools.pass_listing import LISTINGS, pass_listing

if TYPE_CHECKING:
    from onnxc.compile_options import CompileOptions
    from onnxc.target import Target as MachineTarget

TARGETS = ("mlir", "llvm")
"""The -t targets that work on onnxc's IR; machine code is --emit=asm|obj."""


class OnnxcDiagnostic(DiagnosticException):
    """An `OnnxcError` re-raised so that `--verify-diagnostics` prints it and goes on."""


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """`-t llvm`: LLVM IR text of a module in the `llvm` dialect, for the module's target
    (its `onnxc.target`, which `--compile-target` sets when it has none; else this host);
    `-t 'llvm{triple=aarch64-unknown-linux-gnu}'` or `{data-layout="..."}` override it."""

    name = "llvm"
    triple: str | None = None
    data_layout: str | None = None

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from onnxc.lowering.to_llvm.translate import to_llvmlite

        if self.triple is None:
            from onnxc.target import target_of

            target = target_of(module)
            triple, data_layout = target.triple, target.data_layout
        else:
            triple, data_layout = self.triple, ""
        if self.data_layout is not None:
            data_layout = self.data_layout
        print(to_llvmlite(module, triple=triple, data_layout=data_layout), file=output)


class _ListAction(argparse.Action):
    """Print a registry (`--list-passes[=onnxc|xdsl]`, `--show-dialects`) and exit, like
    `--version`; `lines` gets the option's value (None without one)."""

    def __init__(self, *args: Any, lines: Any, **kwargs: Any):
        kwargs.setdefault("nargs", 0)
        super().__init__(*args, **kwargs)
        self.lines = lines

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                 option_string: str | None = None) -> None:
        print("\n".join(self.lines(values or None)))
        parser.exit()


def _target_choice(spec: str) -> str:
    """-t's value: a target that works on onnxc's IR, else why not (argparse reports it)."""
    try:
        name = parse_spec(spec).name
    except ArgSpecParseError:
        return spec  # xDSL's own check reports the malformed spec
    if name in TARGETS:
        return spec
    from xdsl.universe import Universe

    if name in Universe.get_multiverse().all_targets:
        raise argparse.ArgumentTypeError(
            f"'{name}' is an xDSL target for xDSL's own low-level dialects, not for onnxc's "
            f"IR; choose mlir or llvm, or --emit=asm|obj for machine code")
    raise argparse.ArgumentTypeError(
        f"unknown target '{name}'; choose mlir or llvm, or --emit=asm|obj for machine code")


def _pass_names(text: str) -> frozenset[str]:
    """`--mlir-print-ir-after=cse,dce` (repeatable) as a set of pass names."""
    return frozenset(name.strip() for name in text.split(",") if name.strip())


class OnnxcOptMain(xDSLOptMain):
    """The `onnxc-opt` driver; see the module docstring for what it adds to `xdsl-opt`."""

    version_format = f"onnxc-opt {version('onnxc')} (xdsl {{xdsl_version}})"

    timer: PassTimer | None = None
    current_module: ModuleOp | None = None
    compile_target: MachineTarget | None = None
    """--compile-target, parsed: set on every input module without an onnxc.target"""
    failed_chunks: int = 0
    _chunk_failed: bool = False
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
        self.available_targets = {"mlir": self.available_targets["mlir"],
                                  "llvm": lambda: LLVMIRTarget}

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

            return import_onnx(io.read(), input_shapes=self.input_shapes())

        def import_text(io: IO[bytes]) -> ModuleOp:
            from onnxc.frontend import import_onnx
            from onnxc.frontend.onnx_model import parse_text

            try:
                text = io.read().decode("utf-8")
            except UnicodeDecodeError as err:
                raise ModelLoadError(f"ONNX text input is not UTF-8: {err}") from None
            return import_onnx(parse_text(text), input_shapes=self.input_shapes())

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
        # a bad flag is one `error:` line (exit code 2), not the 1.5 KB usage text before it
        arg_parser.error = lambda message: arg_parser.exit(2, f"error: {message}\n")
        target = arg_parser._option_string_actions["-t"]  # xDSL's: only targets that work
        target.type = _target_choice
        target.help = ("output format: mlir (the default) or llvm (LLVM IR of a module in the "
                       "llvm dialect; see also --emit)")
        arg_parser.add_argument(
            "--list-passes",
            action=_ListAction,
            nargs="?",
            choices=LISTINGS,
            lines=lambda which: pass_listing(self.available_passes, which or "all"),
            help="print the registered passes (all, or only onnxc's or xDSL's), each with its "
            "description and options (-p 'name{option=value}'), and exit",
        )
        arg_parser.add_argument(
            "--show-dialects",
            action=_ListAction,
            lines=lambda _: ["Available Dialects:", *sorted(self.ctx.registered_dialect_names)],
            help="print the registered dialects and exit",
        )
        arg_parser.add_argument(
            "--emit", choices=emit.STAGES, default="graph",
            help="stop the compile after this stage and write it: graph (default), loops, "
            "llvm-dialect (MLIR text), llvm-ir, asm, obj (object code) or lib (shared "
            "library); obj and lib need -o FILE",
        )
        arg_parser.add_argument(
            "--num-threads", type=int, default=None, metavar="N",
            help="threads the lowered code's parallel loops use (--emit past loops; default "
            "$ONNXC_NUM_THREADS, else this machine's CPUs, as onnxc.compile)",
        )
        arg_parser.add_argument(
            "--input-shapes", action="append", default=[], metavar="NAME=D1xD2x...",
            help="fix the sizes of an ONNX input's symbolic dimensions, e.g. "
            "images=1x3x224x224 (repeatable, or comma-separated)",
        )
        for flag, when in [("--mlir-print-ir-before", "before"),
                           ("--mlir-print-ir-after", "after")]:
            arg_parser.add_argument(
                flag, action="append", default=[], metavar="PASS[,PASS...]",
                help=f"print the IR {when} every run of these passes (stderr)")
        arg_parser.add_argument(
            "--mlir-elide-elementsattrs-if-larger", dest="elide_larger", type=int,
            metavar="N", default=None,
            help="print dense constants of more than N elements as "
            "dense_resource<__elided__> (the output no longer holds the weights)",
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
            "--compile-target", default=None,
            help="what kernels and layouts are built for: host, a preset (x86-64-v2/v3/v4, "
            "aarch64, cortex-a76, neoverse-n1, neoverse-v1) or TRIPLE[:CPU[:FEATURES]]; "
            "recorded as the onnxc.target attribute of an input module without one "
            "(default: the module's attribute, else host)",
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

    # ------------------------------------------------------------------ pipeline

    def setup_pipeline(self):
        """Build the pipeline from `-p` or `--pass-pipeline`, instrumented MLIR-style."""
        if self.args.pass_pipeline is not None and self.args.passes:
            raise OnnxcError("--pass-pipeline cannot be combined with -p/--passes")
        text = self.args.pass_pipeline if self.args.pass_pipeline is not None else self.args.passes
        specs = split_pipeline(text)
        if self.args.opt_level is not None:  # the level's passes, then -p's
            from onnxc.passes.levels import graph_pipeline

            specs = [*split_pipeline(graph_pipeline(self.args.opt_level)), *specs]
        if self.args.emit not in ("graph", "lib"):  # lib lowers through onnxc.api
            specs += emit.lowering_passes(self.args.emit, num_threads=self.num_threads())
        self.pipeline_text = ",".join(specs)
        self._check_emit()
        print_before = frozenset().union(*map(_pass_names, self.args.mlir_print_ir_before))
        print_after = frozenset().union(*map(_pass_names, self.args.mlir_print_ir_after))
        for name in sorted(print_before | print_after):
            if name not in self.available_passes:
                raise UnknownPassError(name, sorted(self.available_passes))
        if self.args.mlir_timing or self.args.time_passes:
            self.timer = PassTimer()
        instrumentation = PassInstrumentation(
            verify=not self.args.disable_verify,
            print_before_all=self.args.mlir_print_ir_before_all,
            print_after_all=self.args.mlir_print_ir_after_all,
            print_after_change=self.args.mlir_print_ir_after_change,
            print_before=print_before,
            print_after=print_after,
            print_generic=self.args.print_op_generic,
            print_debuginfo=self.args.print_debuginfo,
            elide_larger=self.args.elide_larger,
            print_between_passes=self.args.print_between_passes,
            timer=self.timer,
        )
        self.pipeline = build_pipeline(self.pipeline_text, self.available_passes,
                                       instrumentation)

    def _check_emit(self) -> None:
        """Refuse --emit combinations that cannot give a usable output, before any work."""
        stage = self.args.emit
        if stage not in emit.IR_STAGES and parse_spec(self.args.target).name != "mlir":
            raise InvalidArgumentError(f"--emit={stage} writes {stage} itself: -t applies "
                                       f"only to the MLIR stages ({', '.join(emit.IR_STAGES)})")
        emit.check_emit_output(stage, self.args.output_file, self.args.split_input_file)
        if self.args.elide_larger is not None and self.args.elide_larger < 0:
            raise InvalidArgumentError("--mlir-elide-elementsattrs-if-larger takes a count "
                                       f"of elements >= 0, got {self.args.elide_larger}")

    def lib_options(self) -> CompileOptions:
        """What `--emit=lib` compiles with: `onnxc.compile_artifact`'s options for the
        graph passes given here (-O and -p), --num-threads and --compile-target."""
        from onnxc.compile_options import CompileOptions
        from onnxc.target import parse_target

        return CompileOptions.of(runs_here=False,
                                 pass_pipeline=split_pipeline(self.pipeline_text),
                                 num_threads=self.num_threads(),
                                 target=parse_target(self.args.compile_target))

    def pipeline_specs(self) -> list[str]:
        """Every pass this run applies, in order (`--print-pipeline`): for --emit=lib,
        exactly the passes of `onnxc.compile` with the same options (pipeline.compile_passes),
        since the library is lowered by the same code."""
        if self.args.emit != "lib":
            return split_pipeline(self.pipeline_text)
        from onnxc import pipeline

        stages = pipeline.compile_passes(self.lib_options())
        return [spec for passes in stages.values() for spec in passes]

    def num_threads(self) -> int:
        from onnxc.runtime.threads import resolve_num_threads

        return resolve_num_threads(self.args.num_threads)

    def input_shapes(self) -> dict[str, tuple[int, ...]] | None:
        """--input-shapes as {name: shape}, None when not given."""
        if not self.args.input_shapes:
            return None
        from onnxc.compile_options import parse_input_shapes

        return parse_input_shapes(self.args.input_shapes)

    # ------------------------------------------------------------------ running

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":  # MLIR's spelling of stdin
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self):
        return "<stdin>" if self.args.input_file in (None, "-") else self.args.input_file

    def prepare_input(self):
        if self.args.frontend:
            extension = self.args.frontend
        elif self.args.input_file in (None, "-"):
            extension = "mlir"
        else:
            extension = os.path.splitext(self.args.input_file)[1].removeprefix(".")
        if extension not in self.available_frontends:
            known = ", ".join(sorted(self.available_frontends))
            raise OnnxcError(
                f"unrecognized input extension '.{extension}'; choose a frontend with "
                f"-f/--frontend ({known})"
            )
        if self.args.input_shapes and extension not in ("onnx", "onnxtxt"):
            raise InvalidArgumentError("--input-shapes applies to ONNX inputs (.onnx, "
                                       ".onnxtxt); MLIR input has its types written out")
        return super().prepare_input()

    def prepare_output(self) -> IO[str]:
        if self.args.emit in emit.BINARY_STAGES:  # written by output_resulting_program
            return StringIO()
        return super().prepare_output()

    def _report_chunk(self, err: Exception) -> None:
        """--split-input-file: print the chunk's error, go on with the next one (as mlir-opt
        does); `run` exits 1 at the end."""
        if diagnostics.debug_enabled():
            raise err
        sys.stdout.flush()
        print(self.describe(err), file=sys.stderr)
        self.failed_chunks += 1
        self._chunk_failed = True

    def _keeps_going(self) -> bool:
        """Whether a failing chunk is reported and the next one runs (rather than raised)."""
        return (self.args.split_input_file and not self.args.verify_diagnostics
                and not self.args.parsing_diagnostics)

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
        self._chunk_failed = False
        self.current_module = None
        parse = super().parse_chunk
        try:
            module = self._timed("Parser", self._as_diagnostic, parse, chunk, file_extension)
        except ParseError as err:
            if not self._keeps_going():
                raise
            err.span = replace(err.span, line_offset=start_offset)
            self._report_chunk(err)
            return None
        except (Exception, ArgSpecParseError) as err:
            if not self._keeps_going() or isinstance(err, DiagnosticException):
                raise
            self._report_chunk(err)
            return None
        self.current_module = module
        if self.compile_target is not None:
            from onnxc.target import module_target, set_module_target

            if module_target(module) is None:  # what its passes build for
                set_module_target(module, self.compile_target)
        return module

    def apply_passes(self, prog: ModuleOp):
        if not self._keeps_going():
            return self._apply_passes(prog)
        try:
            self._apply_passes(prog)
        except Exception as err:  # noqa: BLE001 - reported, exit code 1 after the last chunk
            self._report_chunk(err)

    def _apply_passes(self, prog: ModuleOp):
        """The pipeline through the compile's pass manager, instrumented as set up above;
        --verify-numerics bisects it pass by pass (its report on stderr), --stats counts."""
        from onnxc import pipeline

        numerics = self.args.verify_numerics
        passes = split_pipeline(self.pipeline_text) if numerics else self.pipeline
        stats = self._as_diagnostic(
            lambda: pipeline.optimize_graph(
                self.ctx, prog, passes, verify_numerics=numerics, stats=self.args.stats,
                verify=False, on_report=lambda report: print(report, file=sys.stderr)))
        if stats is not None:
            print(stats, file=sys.stderr)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self._chunk_failed:
            return ""
        if not self._keeps_going():
            return self._timed("Output", self._output, prog)
        try:
            return self._timed("Output", self._output, prog)
        except Exception as err:  # noqa: BLE001 - reported, exit code 1 after the last chunk
            self._report_chunk(err)
            return ""

    def _output(self, prog: ModuleOp) -> str:
        """The --emit stage's output (binary stages write their file and return "")."""
        from onnxc.target import target_of

        stage = self.args.emit
        if stage in emit.IR_STAGES:
            if parse_spec(self.args.target).name != "mlir" or self.args.syntax_highlight:
                return super().output_resulting_program(prog)
            return module_text(prog, generic=self.args.print_op_generic,
                               debuginfo=self.args.print_debuginfo,
                               elide_larger=self.args.elide_larger,
                               properties_as_attributes=self.args.print_no_properties) + "\n\n"
        target = target_of(prog)  # what its kernels were built for
        if stage == "lib":
            emit.emit_library(self.ctx, prog, self.lib_options(), self.args.output_file)
            return ""
        if stage == "obj":
            emit.emit_object_file(prog, target, self.args.output_file)
            return ""
        return emit.emit_text(stage, prog, target)

    def run(self):
        self.failed_chunks = 0
        if self.args.print_pipeline:
            print(nested_pipeline(self.pipeline_specs()))
            return
        from onnxc.target import parse_target

        # checked before the input is read; set on each module without a target of its own
        given = self.args.compile_target
        self.compile_target = None if given is None else parse_target(given)
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
        if tool.failed_chunks:  # each one reported already
            return 1
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
