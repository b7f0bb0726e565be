"""Converters of the ai.onnx string ops (docs/strings.md): RegexFullMatch, StringSplit."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, i1, i64

from onnxc.dialects.graph_strings import RegexFullMatchOp, StringSplitOp, StringType, string
from onnxc.dialects.symbolic_dims import SymDim
from onnxc.dialects.regex_dfa import UnsupportedRegex, compile_dfa
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result


def text_array(value) -> np.ndarray:
    """`value` as an array; text (str, or the UTF-8 bytes of a STRING TensorProto) as an
    object array of str, which a converter's constants become string constants from
    (ValueError for bytes that are not UTF-8)."""
    array = np.asarray(value, dtype=object if isinstance(value, list | tuple | str | bytes)
                       else None)
    if array.dtype.kind not in "OUS" or (array.dtype == object and array.size and not
                                         isinstance(array.reshape(-1)[0], str | bytes)):
        return np.asarray(value)
    out = np.empty(array.shape, dtype=object)
    flat = out.reshape(-1)
    for i, item in enumerate(array.reshape(-1).tolist()):
        flat[i] = item.decode("utf-8") if isinstance(item, bytes) else str(item)
    return out


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


def convert_string_split(ctx: NodeContext) -> list[Result]:
    """graph.string_split: the pieces' last dimension, the most pieces of any string, is a
    size the run defines (dialects/graph_dynamic.py)."""
    _require_strings(ctx)
    delimiter = ctx.attr("delimiter", "")
    maxsplit = int(ctx.attr("maxsplit", -1))
    if not isinstance(delimiter, str):
        raise ctx.invalid("delimiter must be a string")
    shape = ctx.shape(0)
    most = SymDim.symbol(ctx.run_symbol("pieces"))
    op = ctx.emit(StringSplitOp(
        operands=[ctx.operand(0)],
        result_types=[types.tensor_type((*shape, most), string),
                      types.tensor_type(shape, i64)],
        properties={"delimiter": StringAttr(delimiter), "maxsplit": IntegerAttr(maxsplit, i64),
                    "defines": ArrayAttr([StringAttr(str(most))])}))
    return list(op.results)


CONVERTERS = {
    "RegexFullMatch": convert_regex_full_match,
    "StringSplit": convert_string_split,
}
