"""`python -m onnxc.tools.op_reference [-o docs/ops.md]`: the op reference, from the dialects.

Like `onnxc-opt --list-passes`, the reference is generated from the code itself so it cannot
drift: for every op of every registered dialect (`registry.ONNXC_DIALECTS`) it writes the op's
name, its class docstring (and that of its abstract graph-op family, e.g. `ReduceOp`), and its
operands, results, properties, attributes and regions with their constraints, read from the
IRDL definition. Ops are grouped by dialect, then by family (the module defining them).
A unit test checks that docs/ops.md equals a fresh rendering and that no op lacks a docstring.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import itertools
import sys
from collections import defaultdict
from collections.abc import Iterable

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
    for name, dialect in dialects.items():
        count = len(list(dialect.operations))
        out += [f"- [`{name}`](#dialect-{name}): {count} op{'s' if count != 1 else ''}"]
    out.append("")
    for name, dialect in dialects.items():
        families: dict[str, list[type[IRDLOperation]]] = defaultdict(list)
        for op in dialect.operations:
            families[op.__module__].append(op)
        out += [f"## Dialect `{name}`", ""]
        for module in sorted(families):
            out += [f"### Family `{module}`", "", _module_summary(module), ""]
            for op in sorted(families[module], key=lambda o: o.name):
                out += render_op(op)
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onnxc.tools.op_reference",
                                     description="Write the Markdown op reference.")
    parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    args = parser.parse_args(argv)
    text = render()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
