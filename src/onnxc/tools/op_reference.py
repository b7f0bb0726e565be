"""`python -m onnxc.tools.op_reference [-o docs/ops.md]`: the op reference, from the dialects.

Like `onnxc-opt --list-passes`, the reference is generated from the code itself so it cannot
drift: for every op of every registered dialect (`registry.ONNXC_DIALECTS`) it writes the op's
name, its class docstring (and that of its abstract graph-op family, e.g. `ReduceOp`), and its
operands, results, properties, attributes and regions with their constraints, read from the
IRDL definition. Ops are grouped by dialect, then by family (the module defining them).
A unit test checks that docs/ops.md equals a fresh rendering and that no op lacks a docstring.

`--support` writes the op-support matrix (docs/op-support.md) from the registries instead:
the importer's CONVERTERS, the kernel tables read through lowering/graph_to_loops/kernels.py,
the half-precision and quantization tables, the evaluators and the exporter's emitters. Which
graph ops an ONNX op imports to is read from its converter when it is a factory closing over
one op class, else found by importing onnx's own one-node test models through the real
importer, so the matrix states what the code does, not what someone remembered.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import itertools
import re
import sys
import types
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable

import numpy as np
import onnx
from xdsl.ir import Dialect, Operation
from xdsl.irdl import (
    IRDLOperation,
    OptOperandDef,
    OptPropertyDef,
    OptRegionDef,
    OptResultDef,
    VarOperandDef,
    VarRegionDef,
    VarResultDef,
)
from xdsl.irdl.constraints import (
    AllOf,
    AnyAttr,
    AnyOf,
    BaseAttr,
    EqAttrConstraint,
    ParamAttrConstraint,
    RangeLengthConstraint,
    RangeOf,
)

from onnxc.registry import ONNXC_DIALECTS

REGENERATE = "python -m onnxc.tools.op_reference -o docs/ops.md"
"""The command that rewrites the committed reference."""
REGENERATE_SUPPORT = "python -m onnxc.tools.op_reference --support -o docs/op-support.md"
"""The command that rewrites the committed op-support matrix."""


def op_doc(op: type[Operation]) -> str:
    """The op class's own docstring, dedented (empty when it has none)."""
    return inspect.cleandoc(op.__dict__.get("__doc__") or "")


def missing_docstrings(dialects: Iterable[Dialect]) -> list[str]:
    """Names of the ops without a docstring of their own."""
    return [op.name for d in dialects for op in d.operations if not op_doc(op)]


def constraint_text(constr: object) -> str:
    """A short, stable spelling of an IRDL constraint: `TensorType`, `IntegerAttr<i64>`..."""
    if isinstance(constr, RangeLengthConstraint):
        return constraint_text(constr.constraint)
    if isinstance(constr, RangeOf):
        return constraint_text(constr.constr)
    if isinstance(constr, BaseAttr):
        return constr.attr.__name__
    if isinstance(constr, AnyAttr):
        return "any"
    if isinstance(constr, EqAttrConstraint):
        return f"`{constr.attr}`"
    if isinstance(constr, ParamAttrConstraint):
        params = [constraint_text(p) for p in constr.param_constrs]
        return f"{constr.base_attr.__name__}<{', '.join(params)}>"
    if isinstance(constr, AnyOf):
        return " \\| ".join(constraint_text(c) for c in constr.attr_constrs)
    if isinstance(constr, AllOf):
        return " & ".join(constraint_text(c) for c in constr.attr_constrs)
    return type(constr).__name__


def _arity(definition: object) -> str:
    if isinstance(definition, OptOperandDef | OptResultDef | OptPropertyDef | OptRegionDef):
        return "optional"
    if isinstance(definition, VarOperandDef | VarResultDef | VarRegionDef):
        return "variadic"
    return ""


@functools.cache
def _module_field_docs(module_name: str) -> dict[str, dict[str, str]]:
    """Class name -> {field name -> the string literal under it} for one module's classes."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module_name]))
    except (KeyError, OSError, TypeError, SyntaxError):
        return {}
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs = out.setdefault(node.name, {})
        for stmt, nxt in itertools.pairwise(node.body):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else (
                [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
            if (len(targets) == 1 and isinstance(targets[0], ast.Name)
                    and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                docs[targets[0].id] = " ".join(nxt.value.value.split())
    return out


def _field_docs(op: type[IRDLOperation]) -> dict[str, str]:
    """Python field name -> its docstring (the string literal after `x = prop_def(...)`), over
    the op class and its bases outside xDSL, nearest class first."""
    docs: dict[str, str] = {}
    for cls in reversed(op.__mro__):
        if cls.__module__.partition(".")[0] not in ("xdsl", "builtins", "abc", "typing"):
            docs.update(_module_field_docs(cls.__module__).get(cls.__name__, {}))
    return docs


def _family_docs(op: type[Operation]) -> list[tuple[str, str]]:
    """(class name, docstring) of the abstract graph-op families `op` derives from."""
    from onnxc.dialects.graph_base import GraphOp

    out = []
    for base in op.__mro__[1:]:
        if base is GraphOp or not (isinstance(base, type) and issubclass(base, GraphOp)):
            continue
        doc = inspect.cleandoc(base.__dict__.get("__doc__") or "")
        if doc:
            out.append((base.__name__, doc))
    return out


def _table(title: str, rows: list[tuple[str, str, str, str]]) -> list[str]:
    if not rows:
        return []
    lines = [f"{title}:", "", "| name | constraint | arity | description |", "|---|---|---|---|"]
    lines += [f"| `{n}` | {c} | {a} | {d.replace('|', chr(92) + '|')} |" for n, c, a, d in rows]
    return [*lines, ""]


def render_op(op: type[IRDLOperation]) -> list[str]:
    """The Markdown section of one op."""
    definition = op.get_irdl_definition()
    fields = _field_docs(op)
    ir_to_py = {ir: py for py, (ir, _) in definition.accessor_names.items()}
    lines = [f"#### `{op.name}`", "", op_doc(op) or "*(no docstring)*", ""]
    for family, doc in _family_docs(op):
        lines += [f"*Family `{family}`:* {' '.join(doc.split())}", ""]

    def rows(named):
        return [(n, constraint_text(d.constr), _arity(d), fields.get(ir_to_py.get(n, n), ""))
                for n, d in named]

    lines += _table("Operands", rows(definition.operands))
    lines += _table("Results", rows(definition.results))
    lines += _table("Properties", rows(sorted(definition.properties.items())))
    lines += _table("Attributes", rows(sorted(definition.attributes.items())))
    lines += _table("Regions", [(n, type(d).__name__.removesuffix("Def"), _arity(d),
                                 fields.get(n, "")) for n, d in definition.regions])
    return lines


def _module_summary(module_name: str) -> str:
    doc = inspect.cleandoc(sys.modules[module_name].__doc__ or "")
    return " ".join(doc.split("\n\n")[0].split())


def render(dialects: dict[str, Dialect] | None = None) -> str:
    """The whole reference as Markdown."""
    if dialects is None:
        dialects = {name: factory() for name, factory in ONNXC_DIALECTS.items()}
    out = [
        "# onnxc op reference",
        "",
        f"Generated from the dialect definitions by `{REGENERATE}`; do not edit by hand.",
        "Constraints are the IRDL ones (`TensorType`: any tensor; shapes and element types",
        "are checked by each op's verifier, see its description).",
        "",
    ]
    from onnxc.dialects.onnxc_attributes import ONNXC_ATTRIBUTES

    for name, dialect in dialects.items():
        count = len(list(dialect.operations))
        what = (f"{len(ONNXC_ATTRIBUTES)} attributes" if name == "onnxc"
                else f"{count} op{'s' if count != 1 else ''}")
        out += [f"- [`{name}`](#dialect-{name}): {what}"]
    out.append("")
    for name, dialect in dialects.items():
        families: dict[str, list[type[IRDLOperation]]] = defaultdict(list)
        for op in dialect.operations:
            families[op.__module__].append(op)
        out += [f"## Dialect `{name}`", ""]
        if name == "onnxc":  # discardable attributes only (dialects/onnxc_attributes.py)
            out += ["Attributes (verified wherever the pass manager verifies a module):", "",
                    "| attribute | holds | on |", "|---|---|---|"]
            out += [f"| `{a.name}` | {a.holds} | {', '.join(f'`{o}`' for o in a.on) or 'any op'} |"
                    for a in ONNXC_ATTRIBUTES.values()]
            out.append("")
        for module in sorted(families):
            out += [f"### Family `{module}`", "", _module_summary(module), ""]
            for op in sorted(families[module], key=lambda o: o.name):
                out += render_op(op)
    return "\n".join(out).rstrip("\n") + "\n"


# ---- the op-support matrix ------------------------------------------------------------------

_NOT_LISTED = ("graph.constant", "graph.yield")
"""Graph ops left out of an ONNX op's list: constants and region terminators go with any."""

_OPSET_TEST = re.compile(r"opset\s*(?:<=|>=|<|>|==|!=)\s*(\d+)")


def _graph_op_classes() -> dict[str, type[Operation]]:
    """Graph-dialect op name -> class."""
    return {op.name: op for op in ONNXC_DIALECTS["graph"]().operations}


def _is_op_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, Operation)


def _helpers(fn: Callable, seen: set[Callable] | None = None) -> list[types.FunctionType]:
    """`fn` (unwrapped) and the functions of its own module it calls or closes over."""
    seen = set() if seen is None else seen
    fn = inspect.unwrap(fn)
    if not isinstance(fn, types.FunctionType) or fn in seen:
        return []
    seen.add(fn)
    out = [fn]
    inner = []
    for cell in fn.__closure__ or ():
        try:
            inner.append(cell.cell_contents)
        except ValueError:
            pass
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        inner += [fn.__globals__.get(name) for name in code.co_names]
    for value in inner:
        if isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            out += _helpers(value, seen)
    return out


def closure_op(converter: Callable) -> type[Operation] | None:
    """The one graph-op class a converter factory closed over (`_unary(graph.ReluOp)`)."""
    fn = inspect.unwrap(converter)
    cells = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:
            pass
    ops = [c for c in cells if _is_op_class(c)]
    return ops[0] if len(ops) == 1 else None


def opset_thresholds(converter: Callable) -> list[int]:
    """The opset versions the converter (or a helper in its module) compares `opset` with."""
    found: set[int] = set()
    for fn in _helpers(converter):
        try:
            found.update(int(v) for v in _OPSET_TEST.findall(inspect.getsource(fn)))
        except (OSError, TypeError):
            pass
    return sorted(found)


def _sample_models() -> dict[str, list[tuple[onnx.ModelProto, list[np.ndarray]]]]:
    """onnx's own one-node test models (onnx.backend.test.case.node), by op type, with the
    inputs of their first data set."""
    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    out: dict[str, list[tuple[onnx.ModelProto, list[np.ndarray]]]] = defaultdict(list)
    for case in cases:
        if case.model is None or len(case.model.graph.node) != 1:
            continue
        inputs = list(case.data_sets[0][0]) if case.data_sets else []
        out[case.model.graph.node[0].op_type].append((case.model, inputs))
    return out


def imported_ops(samples: list[tuple[onnx.ModelProto, list[np.ndarray]]]) -> set[str]:
    """The graph ops the real importer makes of the sample models that it imports: as they
    are, else with their integer inputs bound as constants (axes, shapes, indices), else with
    all inputs but the first bound, else with all of them bound (the importer requires many
    inputs to be constants)."""
    from onnxc.frontend import import_onnx

    found: set[str] = set()
    for model, inputs in samples:
        named = [(vi.name, a) for vi, a in zip(model.graph.input, inputs, strict=False)]
        if not all(isinstance(a, np.ndarray | np.generic) for _, a in named):
            named = []  # sequences and optionals: only the model as it is
        named = [(n, np.asarray(a)) for n, a in named]
        tiers = [{}, {n: a for n, a in named if a.dtype.kind in "iub"}, dict(named[1:]),
                 dict(named)]
        for constants in tiers:
            try:
                module = import_onnx(model, constants or None)
            except Exception:  # noqa: BLE001, S112 - a sample the importer refuses says nothing
                continue
            found.update(o.name for o in module.walk() if o.name.startswith("graph."))
            break
    return found


def _precision_facts(op: type[Operation]) -> tuple[str, str, str]:
    """(fp16, bf16, int8) handling of one graph op, as its traits and the registries state
    it."""
    from onnxc.dialects.graph_traits import AnyElementKernel, HalfKernel, QuantizationKernel
    from onnxc.lowering.graph_to_loops import kernels
    from onnxc.passes import quant_move

    if op.has_trait(QuantizationKernel):
        return "own kernel", "own kernel", "quantization op"
    int8 = "stays int8 between DQ and Q" if issubclass(op, quant_move.MOVING_OPS) else ""
    if op.has_trait(AnyElementKernel):
        return "native", "native", int8
    fp16 = "native" if op.has_trait(HalfKernel) else "widened to f32"
    bf16 = "widened to f32"
    if issubclass(op, kernels.BF16_KERNELS):
        bf16 += "; bf16 compute with `precision=\"bf16\"`"
    return fp16, bf16, int8


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def render_support() -> str:
    """The op-support matrix as Markdown."""
    from onnxc.frontend.onnx_converters import DOMAIN_CONVERTERS
    from onnxc.frontend.onnx_export import all_emitters
    from onnxc.frontend.onnx_model import DEFAULT_DOMAINS
    from onnxc.frontend.onnx_ops_microsoft_examples import examples
    from onnxc.lowering.graph_to_loops import kernels
    from onnxc.passes.evaluator import EVALUATORS

    graph_ops = _graph_op_classes()
    emitters = all_emitters()
    samples = {("", op): cases for op, cases in _sample_models().items()} | examples()
    out = [
        "# Op support matrix",
        "",
        f"Generated from the registries by `{REGENERATE_SUPPORT}`; do not edit by hand.",
        "",
        ("The ONNX ops below are those of the default domain "
        f"({', '.join(f'`{d or chr(34) * 2}`' for d in DEFAULT_DOMAINS)}), at any opset "
        "onnx knows, then onnxruntime's contrib ops of other domains, named with their domain "
        "(`com.microsoft.Attention`); *opsets read* are the versions its converter compares "
        "the model's opset with (its behaviour changes there). *Imports to* lists the graph ops the importer "
        "builds for it: read from the converter when it is a factory of one op, else found "
        "by importing onnx's one-node test models (`onnx.backend.test.case.node`; for the "
        "contrib ops `frontend/onnx_ops_microsoft_examples.py`) through "
        "`onnxc.frontend.import_onnx`; *composite* when no such model imports (the converter "
        "needs constant inputs, sequences or optionals), and constants are not listed. The "
        "graph ops' own support is in the second table; their definitions are in the "
        "[op reference](ops.md)."),
        "",
        "## ONNX ops",
        "",
        ("| ONNX op | opsets read | imports to | kernels | symbolic sizes | evaluator "
        "| exporter |"),
        "|---|---|---|---|---|---|---|",
    ]
    imported_from: dict[str, list[str]] = defaultdict(list)
    rows = [(domain, op) for domain, table in DOMAIN_CONVERTERS.items() for op in sorted(table)]
    for domain, op in rows:
        converter = DOMAIN_CONVERTERS[domain][op]
        onnx_op = f"{domain}.{op}" if domain else op
        single = closure_op(converter)
        names = {single.name} if single else imported_ops(samples.get((domain, op), []))
        classes = [graph_ops[n] for n in sorted(names)
                   if n in graph_ops and n not in _NOT_LISTED]
        for c in classes:
            imported_from[c.name].append(onnx_op)
        thresholds = ", ".join(str(v) for v in opset_thresholds(converter))

        def share(table, classes=classes) -> str:
            missing = [c.name for c in classes if c not in table]
            if not classes:
                return ""
            if not missing:
                return "all" if len(classes) > 1 else "yes"
            if len(missing) == len(classes):
                return "none" if len(classes) > 1 else "no"
            return "not " + ", ".join(f"`{m}`" for m in missing)

        ops_cell = ", ".join(f"`{c.name}`" for c in classes) or (
            "*a constant*" if "graph.constant" in names else "*composite*")
        out.append(f"| `{onnx_op}` | {thresholds} | {ops_cell} | {share(kernels.KERNELS)} "
                   f"| {share(kernels.SYMBOLIC_KERNELS)} | {share(EVALUATORS)} "
                   f"| {share(emitters)} |")
    out += [
        "",
        "## Graph ops",
        "",
        ("*Kernel*: `convert-graph-to-loops` has a kernel for it (`kernels.KERNELS`); *symbolic*: "
        "that kernel reads sizes at run time (`SYMBOLIC_KERNELS`); *fp16* and *bf16*: "
        "`widen-half-precision` leaves the op on half tensors (*native*) or computes it in f32 "
        "between casts; *int8*: a quantization op, or one `move-quant-dequant` runs on the "
        "8-bit tensor; *evaluator*: constant folding and `--verify-numerics` have a numpy "
        "reference (`passes/evaluator*.py`); *exporter*: `onnxc optimize` writes it back to "
        "ONNX (`frontend/onnx_export*.py`). An op no ONNX op imports to is made by a pass."),
        "",
        ("| graph op | kernel | symbolic | fp16 | bf16 | int8 | evaluator | exporter "
        "| from ONNX |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, op in sorted(graph_ops.items()):
        fp16, bf16, int8 = _precision_facts(op)
        has_kernel = op in kernels.KERNELS
        if not has_kernel and fp16 == bf16 == "widened to f32":
            fp16 = bf16 = ""
        sources = ", ".join(f"`{o}`" for o in imported_from.get(name, [])) or (
            "*any*" if name in _NOT_LISTED else "*a pass*")
        out.append(f"| `{name}` | {_yes(has_kernel)} | {_yes(op in kernels.SYMBOLIC_KERNELS)} "
                   f"| {fp16} | {bf16} | {int8} | {_yes(op in EVALUATORS)} "
                   f"| {_yes(op in emitters)} | {sources} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onnxc.tools.op_reference",
                                     description="Write the Markdown op reference.")
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    parser.add_argument("--support", action="store_true",
                        help="write the op-support matrix (docs/op-support.md) instead")
    args = parser.parse_args(argv)
    text = render_support() if args.support else render()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
