"""The string element type, `!graph.string`: ONNX's STRING tensors (docs/strings.md).

A string element is 16 bytes in native code, a `{i8* ptr, i64 len}` pair of UTF-8 bytes
that are not NUL-terminated; the bytes live outside the tensor (in the caller's input
memory, a constant's blob or a run's output arena). A kernel that only moves elements moves
a pair like any 16-byte element (it is carried as an `i128` in LLVM), so the data-movement
ops with `AnyElementKernel` take strings as they are.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    FixedBitwidthType,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import (
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, shape_of
from onnxc.dialects.graph_dynamic import DefinesSizes
from onnxc.dialects.graph_shapes import broadcast_shapes
from onnxc.dialects.symbolic_dims import Dim
from onnxc.dialects.string_dtype import STRING_BYTES, STRING_DTYPE

__all__ = ["STRING_BYTES", "STRING_DTYPE", "STRING_GRAPH_OPS", "IntegersOfStringsOp",
           "RegexFullMatchOp", "StringOfIntegersOp",
           "BYTE_MAKING_OPS", "StringCaseOp", "StringConcatOp", "StringKeepOp",
           "StringLookupOp", "StringSplitOp", "StringType", "case_table", "StringsOp", "decode_strings", "encode_strings", "is_string",
           "string"]


@irdl_attr_definition
class StringType(ParametrizedAttribute, FixedBitwidthType):
    """`!graph.string`: a UTF-8 string element, 16 bytes (pointer, length) in memory."""

    name = "graph.string"

    @property
    def bitwidth(self) -> int:
        return 8 * STRING_BYTES

    @property
    def compile_time_size(self) -> int:
        return STRING_BYTES


string = StringType()


def is_string(t: Attribute) -> bool:
    """Whether `t` is the string element type (or a shaped type of strings)."""
    element = getattr(t, "element_type", t)
    return isinstance(element, StringType)


def _element(value) -> Attribute:
    return value.type.get_element_type()


@irdl_op_definition
class StringsOp(GraphOp):
    """The strings of a constant (a STRING initializer or Constant): element i is the bytes
    `data[spans[i, 0] : spans[i, 0] + spans[i, 1]]` (UTF-8, checked at import). `data` is a
    `graph.constant` of ui8: the result points into it, and constants live as long as the
    compiled model, so a string output may hold these pointers after the run."""

    name = "graph.strings"

    data = operand_def(TensorType)
    spans = operand_def(TensorType)
    output = result_def(TensorType)

    def verify_element_types(self) -> None:
        if _element(self.data) != IntegerType(8, Signedness.UNSIGNED) \
                or _element(self.spans) != i64 or not isinstance(_element(self.output),
                                                                 StringType):
            raise VerifyException(f"{self.name}: takes ui8 data and i64 spans, gives strings")
        owner = self.data.owner
        if getattr(owner, "name", None) != "graph.constant":
            raise VerifyException(f"{self.name}: its data must be a graph.constant")

    def infer_shapes(self):
        spans = shape_of(self.spans)
        if not spans or spans[-1] != 2:
            raise ValueError("spans must have a last dimension of 2 (offset, length)")
        return [spans[:-1]]




def encode_strings(array) -> tuple[np.ndarray, np.ndarray]:
    """The (data, spans) of a StringsOp holding `array` (str, or UTF-8 bytes; ValueError
    naming the element for bytes that are not UTF-8): data the ui8 concatenation of the
    elements' bytes, spans (*shape, 2) their (offset, length)."""
    array = np.asarray(array, dtype=object)
    parts = []
    for i, item in enumerate(array.reshape(-1).tolist()):
        if isinstance(item, bytes | np.bytes_):
            try:
                bytes(item).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"string element {i} is not UTF-8") from None
            parts.append(bytes(item))
        elif isinstance(item, str):
            parts.append(item.encode("utf-8", "surrogatepass"))
        else:
            raise ValueError(f"string element {i} is a {type(item).__name__}")
    lengths = np.array([len(p) for p in parts], np.int64)
    spans = np.stack([np.cumsum(lengths) - lengths, lengths], axis=-1) if parts \
        else np.zeros((0, 2), np.int64)
    data = np.frombuffer(b"".join(parts) or b"\0", np.uint8)
    return data, spans.reshape((*array.shape, 2))


def decode_strings(data: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """The object array of str a StringsOp's (data, spans) hold (ValueError when a span
    leaves the data)."""
    raw = np.asarray(data, np.uint8).tobytes()
    flat = np.asarray(spans, np.int64).reshape(-1, 2)
    out = np.empty(len(flat), dtype=object)
    for i, (offset, length) in enumerate(flat.tolist()):
        if offset < 0 or length < 0 or offset + length > len(raw):
            raise ValueError(f"string span {i} leaves its data")
        out[i] = raw[offset:offset + length].decode("utf-8")
    return out.reshape(np.shape(spans)[:-1])


@irdl_op_definition
class RegexFullMatchOp(GraphOp):
    """ONNX RegexFullMatch: whether each string matches `pattern` as a whole. The pattern
    is compiled to a DFA over UTF-8 bytes at compile time (dialects/regex_dfa.py: RE2's
    syntax as far as a DFA goes), which the kernel walks once per byte."""

    name = "graph.regex_full_match"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    pattern = prop_def(StringAttr)

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.input), StringType) or _element(self.output) != i1:
            raise VerifyException(f"{self.name}: takes strings, gives i1")

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class StringSplitOp(DefinesSizes):
    """ONNX StringSplit as onnxruntime computes it: each string cut at `delimiter` (at most
    `maxsplit` times, -1: no limit) as Python's `str.split`, but "" has no pieces; without a
    delimiter ("") at runs of spaces, the string and the last piece trimmed of spaces. `pieces` is [..., k], each row padded with ""
    to `k` (the run symbol `defines[0]`: the most pieces of any string), `counts` [...] the
    pieces of each. The pieces point into the input's bytes."""

    name = "graph.string_split"

    input = operand_def(TensorType)
    pieces = result_def(TensorType)
    counts = result_def(TensorType)
    delimiter = prop_def(StringAttr)
    maxsplit = prop_def(IntegerAttr)

    def same_element_type_operands(self):
        return []

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.input), StringType) \
                or not isinstance(_element(self.pieces), StringType) \
                or _element(self.counts) != i64:
            raise VerifyException(f"{self.name}: takes strings, gives strings and i64 counts")

    def infer_shapes(self):
        if len(self.defines.data) != 1:
            raise ValueError("defines one size, the most pieces")
        x = shape_of(self.input)
        return [(*x, *self.defined()), x]

    def defined_sizes(self) -> dict[str, Dim | None]:
        (k,) = [a.data for a in self.defines.data]
        return {k: None}  # a capacity: a string's pieces are bounded by its run-time length


@irdl_op_definition
class StringKeepOp(DefinesSizes):
    """The strings of `input` ([C]) where `keep` ([C], i1) holds, in order, [count]; when
    none is kept, one empty string (StringNormalizer's rule): `count` (the run symbol
    `defines[0]`) is at least 1 and at most C + 1."""

    name = "graph.string_keep"

    input = operand_def(TensorType)
    keep = operand_def(TensorType)
    output = result_def(TensorType)

    def same_element_type_operands(self):
        return [self.input]

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.input), StringType) or _element(self.keep) != i1:
            raise VerifyException(f"{self.name}: takes strings and an i1 mask")
        super().verify_element_types()

    def infer_shapes(self):
        x, keep = shape_of(self.input), shape_of(self.keep)
        if len(x) != 1 or keep != x or len(self.defines.data) != 1:
            raise ValueError("takes [C] strings and a [C] mask, defines one count")
        return [tuple(self.defined())]

    def defined_sizes(self) -> dict[str, Dim | None]:
        (count,) = [a.data for a in self.defines.data]
        return {count: shape_of(self.input)[0] + 1}


class MakesBytes(DefinesSizes):
    """An op whose strings are bytes it writes: its first result, `data` ([n] i8, n the run
    symbol `defines[0]`: a capacity the run may outgrow), holds them, and the importer makes
    it a hidden output of the model (runtime/strings.py HIDDEN_PREFIX), so that they live
    until the run's string outputs are read."""

    def defined_sizes(self) -> dict[str, Dim | None]:
        (n,) = [a.data for a in self.defines.data]
        return {n: None}

    def _check_data(self) -> None:
        if _element(self.data) != i8 or len(shape_of(self.data)) != 1 \
                or not isinstance(_element(self.output), StringType):
            raise VerifyException(f"{self.name}: gives [n] i8 bytes and strings")


@irdl_op_definition
class StringConcatOp(MakesBytes):
    """ONNX StringConcat: lhs[i] + rhs[i] with broadcasting, each result's bytes written
    to `data` one after the other (their total is the run size `defines[0]`)."""

    name = "graph.string_concat"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    data = result_def(TensorType)
    output = result_def(TensorType)

    def same_element_type_operands(self):
        return [self.lhs, self.rhs]

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.lhs), StringType) \
                or not isinstance(_element(self.rhs), StringType):
            raise VerifyException(f"{self.name}: takes strings")
        self._check_data()

    def infer_shapes(self):
        return [tuple(self.defined()), broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))]


@irdl_op_definition
class StringCaseOp(MakesBytes):
    """StringNormalizer's case change: each string with every character of U+0000-U+07FF
    mapped to its simple lower (`upper` 0) or upper case unless that takes more UTF-8 bytes
    (`case_table`); the bytes written to `data` one string after the other (the run size
    `defines[0]` is the input's byte total, which they never exceed)."""

    name = "graph.string_case"

    input = operand_def(TensorType)
    data = result_def(TensorType)
    output = result_def(TensorType)
    upper = prop_def(IntegerAttr)

    def same_element_type_operands(self):
        return [self.input]

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.input), StringType):
            raise VerifyException(f"{self.name}: takes strings")
        self._check_data()

    def infer_shapes(self):
        return [tuple(self.defined()), shape_of(self.input)]


CASE_TABLE_SIZE = 0x800
"""the code points StringCaseOp maps: those of one and two UTF-8 bytes"""


def case_table(upper: bool) -> np.ndarray:
    """The simple case mapping StringCaseOp applies, code point -> code point (i32) for
    U+0000-U+07FF (the one- and two-byte characters: Latin, Greek, Cyrillic, Armenian,
    Hebrew, Arabic, ...): a character whose mapping is several characters or has more UTF-8 bytes
    maps to itself (a mapping may have fewer: İ -> i)."""
    table = np.arange(CASE_TABLE_SIZE, dtype=np.int32)
    for cp in range(CASE_TABLE_SIZE):
        mapped = chr(cp).upper() if upper else chr(cp).lower()
        if cp == 0x130 and not upper:
            mapped = "i"  # its simple lowercase (the full one adds a combining dot)
        if len(mapped) == 1 and len(mapped.encode()) <= len(chr(cp).encode()):
            table[cp] = ord(mapped)
    return table


@irdl_op_definition
class StringLookupOp(GraphOp):
    """The index in `keys` of each string (its first occurrence), -1 for a string that is
    no key: a trie of the keys' UTF-8 bytes (dialects/regex_dfa.compile_key_trie) walked
    once per byte, LabelEncoder's lookup of string keys."""

    name = "graph.string_lookup"

    input = operand_def(TensorType)
    output = result_def(TensorType)
    keys = prop_def(ArrayAttr[StringAttr])

    def same_element_type_operands(self):
        return []

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.input), StringType) or _element(self.output) != i64:
            raise VerifyException(f"{self.name}: takes strings, gives i64 indices")

    def infer_shapes(self):
        return [shape_of(self.input)]

    def key_list(self) -> tuple[str, ...]:
        return tuple(k.data for k in self.keys.data)


@irdl_op_definition
class StringOfIntegersOp(MakesBytes):
    """Cast of integers (bools as 0 and 1) to STRING: each value's decimal digits, '-'
    first for a negative signed value, written to `data` one after the other (their total
    is the run size `defines[0]`)."""

    name = "graph.string_of_integers"

    input = operand_def(TensorType)
    data = result_def(TensorType)
    output = result_def(TensorType)

    def same_element_type_operands(self):
        return []

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.input), IntegerType):
            raise VerifyException(f"{self.name}: takes integers")
        self._check_data()

    def infer_shapes(self):
        return [tuple(self.defined()), shape_of(self.input)]


@irdl_op_definition
class IntegersOfStringsOp(GraphOp):
    """Cast of STRING to integers as onnxruntime parses them (C's strtoll / strtoull):
    leading whitespace, an optional sign, then decimal digits up to the first other
    character. `values` holds the bits (i64) of the value: the signed one when `unsigned`
    is 0 (in range of int64), else the unsigned one (in range of uint64, a '-' negating it
    modulo 2^64); `valid` says the string had a digit and its value was in range."""

    name = "graph.integers_of_strings"

    input = operand_def(TensorType)
    values = result_def(TensorType)
    valid = result_def(TensorType)
    unsigned = prop_def(IntegerAttr)

    def same_element_type_operands(self):
        return []

    def verify_element_types(self) -> None:
        if not isinstance(_element(self.input), StringType) or _element(self.values) != i64 \
                or _element(self.valid) != i1:
            raise VerifyException(f"{self.name}: takes strings, gives i64 values and i1 valid")

    def infer_shapes(self):
        return [shape_of(self.input), shape_of(self.input)]


BYTE_MAKING_OPS = (StringConcatOp, StringCaseOp, StringOfIntegersOp)
"""the ops whose `data` result the importer makes a hidden model output"""

STRING_GRAPH_OPS = (StringsOp, RegexFullMatchOp, StringSplitOp, StringKeepOp, StringConcatOp,
                    StringCaseOp, StringLookupOp, StringOfIntegersOp, IntegersOfStringsOp)
"""the graph ops of this module, for the dialect (dialects/graph.py)"""
