"""Converters of the ai.onnx string ops (docs/strings.md): RegexFullMatch, StringSplit,
StringNormalizer, StringConcat."""

from __future__ import annotations

import re

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    i1,
    i8,
    i64,
)
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_strings import (
    BYTE_MAKING_OPS,
    IntegersOfStringsOp,
    RegexFullMatchOp,
    StringCaseOp,
    StringConcatOp,
    StringKeepOp,
    StringLookupOp,
    StringOfIntegersOp,
    StringSplitOp,
    StringType,
    string,
)
from onnxc.dialects.regex_dfa import UnsupportedRegex, compile_dfa, compile_key_trie
from onnxc.dialects.string_dtype import HIDDEN_PREFIX
from onnxc.dialects.symbolic_dims import SymDim
from onnxc.errors import UnsupportedOpError
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


def made_bytes(block, opset: int) -> list:
    """The `data` results of the ops of `block` that write new string bytes: the importer
    returns them as hidden outputs, so the bytes outlive the run's kernels. Such an op in a
    Loop or If body (whose results a run overwrites) is an UnsupportedOpError."""
    found = []
    for op in block.ops:
        if isinstance(op, BYTE_MAKING_OPS):
            found.append(op.data)
        for region in op.regions:
            for inner in region.walk():
                if isinstance(inner, BYTE_MAKING_OPS):
                    raise UnsupportedOpError(inner.name, op.name, opset,
                                             "strings made inside a Loop or If body")
    return found


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


def convert_string_normalizer(ctx: NodeContext) -> list[Result]:
    """The strings that are no stopword (compared through a DFA of the stopwords, folding
    the simple case pairs when not case-sensitive), one "" when none is left, then their
    case changed (graph.string_case: the simple mappings up to U+024F)."""
    _require_strings(ctx)
    action = ctx.attr("case_change_action", "NONE")
    if action not in ("NONE", "LOWER", "UPPER"):
        raise ctx.invalid(f"case_change_action must be NONE, LOWER or UPPER, got {action!r}")
    shape = ctx.shape(0)
    if len(shape) not in (1, 2) or (len(shape) == 2 and shape[0] != 1):
        raise ctx.invalid(f"X must be [C] or [1, C], got {list(shape)}")
    stopwords = list(ctx.attr("stopwords", []))
    x = ctx.operand(0)
    if not stopwords:
        return [_case(ctx, x, action)]
    flat = x if len(shape) == 1 else ctx.emit1(graph.ReshapeOp(
        operands=[x, []], result_types=[types.tensor_type(shape[1:], string)]))
    pattern = "(?:" + "|".join(re.escape(w) for w in stopwords) + ")"
    if not ctx.attr("is_case_sensitive", 0):
        pattern = "(?i)" + pattern
    try:
        compile_dfa(pattern)
    except UnsupportedRegex as err:
        raise ctx.unsupported(f"stopwords: {err}") from None
    mask = types.tensor_type(shape[1:] if len(shape) == 2 else shape, i1)
    stop = ctx.emit1(RegexFullMatchOp(operands=[flat], result_types=[mask],
                                      properties={"pattern": StringAttr(pattern)}))
    keep = ctx.emit1(graph.NotOp(operands=[stop], result_types=[mask]))
    count = SymDim.symbol(ctx.run_symbol("kept"))
    kept = ctx.emit1(StringKeepOp(operands=[flat, keep],
                                  result_types=[types.tensor_type((count,), string)],
                                  properties={"defines": ArrayAttr([StringAttr(str(count))])}))
    kept = _case(ctx, kept, action)
    if len(shape) == 1:
        return [kept]
    return [ctx.emit1(graph.ReshapeOp(operands=[kept, []],
                                      result_types=[types.tensor_type((1, count), string)]))]


def _case(ctx: NodeContext, x, action: str):
    """`x` with its case changed (graph.string_case), or as it is for NONE."""
    if action == "NONE":
        return ctx.emit1(graph.IdentityOp(operands=[x], result_types=[x.type]))
    size = SymDim.symbol(ctx.run_symbol("bytes"))
    op = ctx.emit(StringCaseOp(
        operands=[x], result_types=[types.tensor_type((size,), i8), x.type],
        properties={"upper": IntegerAttr(int(action == "UPPER"), i64),
                    "defines": ArrayAttr([StringAttr(str(size))])}))
    return op.results[1]


def convert_string_concat(ctx: NodeContext) -> list[Result]:
    """graph.string_concat: the results' bytes are written by the kernel (their total a
    size the run defines, their buffer a hidden output: made_bytes)."""
    _require_strings(ctx, 0)
    _require_strings(ctx, 1)
    out = ctx.infer(shapes.broadcast_shapes, ctx.shape(0), ctx.shape(1))
    size = SymDim.symbol(ctx.run_symbol("bytes"))
    op = ctx.emit(StringConcatOp(
        operands=[ctx.operand(0), ctx.operand(1)],
        result_types=[types.tensor_type((size,), i8), types.tensor_type(out, string)],
        properties={"defines": ArrayAttr([StringAttr(str(size))])}))
    return [op.results[1]]


def key_index(ctx: NodeContext, x, keys) -> SSAValue:
    """The index in `keys` (str) of each string of `x` (its first occurrence; -1: no key),
    by a trie of the keys walked once per byte (graph.string_lookup), for LabelEncoder and
    the other ai.onnx.ml ops with string categories; UnsupportedOpError for a key table
    past regex_dfa.MAX_TABLE."""
    keys = tuple(str(k) for k in keys)
    try:
        compile_key_trie(keys)
    except UnsupportedRegex as err:
        raise ctx.unsupported(f"string keys: {err}") from None
    return ctx.emit1(StringLookupOp(
        operands=[x], result_types=[types.tensor_type(graph.shape_of(x), i64)],
        properties={"keys": ArrayAttr([StringAttr(k) for k in keys])}))


def cast_strings(ctx: NodeContext, x: SSAValue, el) -> SSAValue:
    """Cast to or from STRING: integers and bools are written as their decimal text
    (graph.string_of_integers); strings are parsed to integers as onnxruntime does
    (strtoll, strtoull for unsigned and bool targets: graph.integers_of_strings), a string
    with no number or out of range stopping the run with an InvalidInputError naming the
    node. Floats need exact decimal conversion, which onnxc does not have: refused."""
    source = x.type.get_element_type()
    shape = graph.shape_of(x)
    if isinstance(el, StringType):
        if not isinstance(source, IntegerType):
            raise ctx.unsupported(f"Cast of {source} to STRING (only integers and bools: "
                                  f"exact float formatting is not implemented)")
        size = SymDim.symbol(ctx.run_symbol("bytes"))
        return ctx.emit(StringOfIntegersOp(
            operands=[x], result_types=[types.tensor_type((size,), i8),
                                        types.tensor_type(shape, string)],
            properties={"defines": ArrayAttr([StringAttr(str(size))])})).results[1]
    if not isinstance(el, IntegerType):
        raise ctx.unsupported(f"Cast of STRING to {el} (only integers and bools: exact "
                              f"float parsing is not implemented)")
    unsigned = el.width.data == 1 or el.signedness.data == Signedness.UNSIGNED
    parsed = ctx.emit(IntegersOfStringsOp(
        operands=[x], result_types=[types.tensor_type(shape, i64),
                                    types.tensor_type(shape, i1)],
        properties={"unsigned": IntegerAttr(int(unsigned), i64)}))
    values, valid = parsed.results
    bad = ctx.emit1(graph.CastOp(operands=[ctx.emit1(graph.NotOp(
        operands=[valid], result_types=[valid.type]))], result_types=[
            types.tensor_type(shape, i64)]))
    ctx.emit(graph.CheckIndicesOp(operands=[bad], properties={
        "bounds": DenseArrayBase.from_list(i64, [1]), "negative": IntegerAttr(0, i64),
        "node": StringAttr(ctx.label), "op_type": StringAttr(ctx.op_name),
        "operand": StringAttr("input (a string that is no integer in range)")}))
    if el == i64:
        return values
    # a narrower integer keeps the low bits (C's conversion), a bool is value != 0
    return ctx.emit1(graph.CastOp(operands=[values], result_types=[
        types.tensor_type(shape, el)]))


CONVERTERS = {
    "RegexFullMatch": convert_regex_full_match,
    "StringSplit": convert_string_split,
    "StringNormalizer": convert_string_normalizer,
    "StringConcat": convert_string_concat,
}
