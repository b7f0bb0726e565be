"""Converters of the ai.onnx string ops (docs/strings.md): RegexFullMatch."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, i1

from onnxc.dialects.graph_strings import RegexFullMatchOp, StringType
from onnxc.dialects.regex_dfa import UnsupportedRegex, compile_dfa
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result


def _require_strings(ctx: NodeContext, i: int = 0) -> None:
    if not isinstance(ctx.element_type(i), StringType):
        raise ctx.invalid(f"input {i} must be a STRING tensor, got {ctx.element_type(i)}")


def convert_regex_full_match(ctx: NodeContext) -> list[Result]:
    """Each string against `pattern`, compiled here once to check it (a construct no DFA
    runs is an UnsupportedOpError naming it) and again, cached, for the kernel's tables."""
    _require_strings(ctx)
    pattern = ctx.attr("pattern", None)
    if not isinstance(pattern, str):
        raise ctx.invalid("RegexFullMatch needs a string attribute 'pattern'")
    try:
        compile_dfa(pattern)
    except UnsupportedRegex as err:
        raise ctx.unsupported(f"pattern {pattern!r}: {err}") from None
    return [ctx.emit1(RegexFullMatchOp(
        operands=[ctx.operand(0)], result_types=[types.tensor_type(ctx.shape(0), i1)],
        properties={"pattern": StringAttr(pattern)}))]


CONVERTERS = {
    "RegexFullMatch": convert_regex_full_match,
}
