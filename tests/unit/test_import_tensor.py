"""Importer tests for data movement, constants and import-time folding of shape math."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import f32, i64

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.ir_helpers import imported_ops

NEWEST = 28


def imported(text: str, opset: int) -> list:
    return imported_ops(text, opset)


def names(ops) -> list[str]:
    return [op.name for op in ops]


def test_constant_node_values():
    ops = imported(
        "g (float[2] x) => (y) { c = Constant<value = float[2] {1.0, 2.0}>() y = Add(x, c) }", 13
    )
    assert names(ops) == ["graph.constant", "graph.add"]
    assert list(ops[0].value.get_values()) == [1.0, 2.0]
    assert ops[0].output.name_hint == "c"


@pytest.mark.parametrize(
    ("attr", "el", "values"),
    [("value_float = 2.5", f32, [2.5]), ("value_floats = [1.0, 2.0]", f32, [1.0, 2.0]),
     ("value_int = 3", i64, [3]), ("value_ints = [4, 5]", i64, [4, 5])],
)
def test_constant_scalar_attributes(attr, el, values):
    (op,) = imported(f"g () => (y) {{ y = Constant<{attr}>() }}", 13)
    assert op.output.type.get_element_type() == el
    assert list(op.value.get_values()) == values


def test_string_constant_imports_as_strings():
    """A string constant is graph.strings over its UTF-8 bytes and (offset, length) spans
    (docs/strings.md)."""
    from onnxc.dialects.dense_data import to_numpy
    from onnxc.dialects.graph_strings import decode_strings

    ops = imported('g () => (y) { y = Constant<value_string = "é">() }', 13)
    assert names(ops) == ["graph.constant", "graph.constant", "graph.strings"]
    data, spans = (to_numpy(op.value) for op in ops[:2])
    assert decode_strings(data, spans).tolist() == "é"


def test_constant_of_shape_float_stays_an_op():
    ops = imported(
        "g (float[2,3] x) => (y) <int64[2] s = {2, 3}> "
        "{ c = ConstantOfShape<value = float[1] {0.5}>(s) y = Add(x, c) }",
        9,
    )
    assert names(ops) == ["graph.constant_of_shape", "graph.add"]
    assert shape_of(ops[0].output) == (2, 3)
    assert list(ops[0].value.get_values()) == [0.5]


def test_constant_of_shape_default_value_is_float_zero():
    (op,) = imported("g () => (y) <int64[1] s = {4}> { y = ConstantOfShape(s) }", 13)
    assert op.output.type.get_element_type() == f32
    assert list(op.value.get_values()) == [0.0]


def test_constant_of_shape_of_a_run_time_shape_binds_run_sizes():
    ops = imported("g (int64[2] s) => (y) { y = ConstantOfShape(s) }", 13)
    assert names(ops) == ["graph.check_indices", "graph.bind_sizes",
                          "graph.constant_of_shape"]
    assert [str(d) for d in shape_of(ops[-1].output)] == ["ConstantOfShape_0_shape0",
                                                          "ConstantOfShape_0_shape1"]


def test_constant_of_shape_needs_a_one_dimensional_shape():
    with pytest.raises(UnsupportedOpError, match="shape.*must be a constant"):
        imported("g (int64[2,1] s) => (y) { y = ConstantOfShape(s) }", 13)


@pytest.mark.parametrize("opset", [5, 13, 14, NEWEST])
def test_reshape_resolves_zero_and_minus_one(opset: int):
    (op,) = imported(
        "g (float[2,3,4] x) => (y) <int64[3] s = {0, -1, 2}> { y = Reshape(x, s) }", opset
    )
    assert isinstance(op, graph.ReshapeOp) and shape_of(op.output) == (2, 6, 2)


def test_reshape_shape_attribute_before_opset_5():
    (op,) = imported("g (float[2,3] x) => (y) { y = Reshape<shape = [3, -1]>(x) }", 4)
    assert shape_of(op.output) == (3, 2)


def test_reshape_allowzero():
    (op,) = imported(
        "g (float[0,3] x) => (y) <int64[2] s = {3, 0}> { y = Reshape<allowzero = 1>(x, s) }", 14
    )
    assert shape_of(op.output) == (3, 0)


def test_reshape_with_computed_shape_input_is_unsupported():
    with pytest.raises(UnsupportedOpError, match="Reshape") as info:
        imported("g (float[6] x, int64[2] s) => (y) { y = Reshape(x, s) }", 13)
    assert "must be a constant" in info.value.detail


def test_reshape_with_wrong_element_count():
    with pytest.raises(ModelLoadError, match="cannot reshape"):
        imported("g (float[6] x) => (y) <int64[2] s = {4, 2}> { y = Reshape(x, s) }", 13)


def test_flatten_negative_axis():
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Flatten<axis = -1>(x) }", 13)
    assert int_of(op.axis) == 2 and shape_of(op.output) == (6, 4)


@pytest.mark.parametrize(("opset", "axes"), [(9, "[0, 2]"), (11, "[0, -1]")])
def test_squeeze_unsqueeze_axes_attribute(opset: int, axes: str):
    ops = imported(
        f"g (float[1,3,1] x) => (y) {{ s = Squeeze<axes = {axes}>(x) "
        "y = Unsqueeze<axes = [0, 2]>(s) }",
        opset,
    )
    assert ints_of(ops[0].axes) == (0, 2) and shape_of(ops[0].output) == (3,)
    assert ints_of(ops[1].axes) == (0, 2) and shape_of(ops[1].output) == (1, 3, 1)


@pytest.mark.parametrize("opset", [13, NEWEST])
def test_squeeze_unsqueeze_axes_input(opset: int):
    ops = imported(
        "g (float[1,3,1] x) => (y) <int64[1] a = {-1}, int64[2] b = {-1, 0}> "
        "{ s = Squeeze(x, a) y = Unsqueeze(s, b) }",
        opset,
    )
    assert ints_of(ops[0].axes) == (2,) and shape_of(ops[0].output) == (1, 3)
    assert ints_of(ops[1].axes) == (0, 3) and shape_of(ops[1].output) == (1, 1, 3, 1)


def test_squeeze_without_axes_removes_all_ones():
    (op,) = imported("g (float[1,3,1,2] x) => (y) { y = Squeeze(x) }", 13)
    assert ints_of(op.axes) == (0, 2) and shape_of(op.output) == (3, 2)


def test_transpose_default_perm_reverses():
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Transpose(x) }", 13)
    assert ints_of(op.perm) == (2, 1, 0) and shape_of(op.output) == (4, 3, 2)


def test_concat_negative_axis():
    (op,) = imported("g (float[2,3] a, float[2,5] b) => (y) { y = Concat<axis = -1>(a, b) }", 13)
    assert int_of(op.axis) == 1 and shape_of(op.output) == (2, 8)


def test_split_sizes_attribute():
    (op,) = imported(
        "g (float[2,6] x) => (a, b) { a, b = Split<axis = 1, split = [2, 4]>(x) }", 11
    )
    assert [shape_of(r) for r in op.outputs] == [(2, 2), (2, 4)]
    assert [r.name_hint for r in op.outputs] == ["a", "b"]


def test_split_sizes_input_and_equal_parts():
    (op,) = imported(
        "g (float[6] x) => (a, b) <int64[2] s = {1, 5}> { a, b = Split(x, s) }", 13
    )
    assert [shape_of(r) for r in op.outputs] == [(1,), (5,)]
    (op,) = imported("g (float[6] x) => (a, b, c) { a, b, c = Split(x) }", 13)
    assert [shape_of(r) for r in op.outputs] == [(2,), (2,), (2,)]


def test_split_num_outputs_uneven():
    (op,) = imported(
        "g (float[7] x) => (a, b, c) { a, b, c = Split<num_outputs = 3>(x) }", NEWEST
    )
    assert [shape_of(r) for r in op.outputs] == [(3,), (3,), (1,)]


def test_slice_attributes_before_opset_10():
    (op,) = imported(
        "g (float[4,5] x) => (y) { y = Slice<starts = [1, 0], ends = [3, -1]>(x) }", 9
    )
    assert ints_of(op.axes) == (0, 1) and ints_of(op.steps) == (1, 1)
    assert shape_of(op.output) == (2, 4)


@pytest.mark.parametrize("opset", [10, 13, NEWEST])
def test_slice_inputs_with_defaults_and_negative_step(opset: int):
    (op,) = imported(
        "g (float[4,5] x) => (y) <int64[1] s = {1}, int64[1] e = {1000}> { y = Slice(x, s, e) }",
        opset,
    )
    assert ints_of(op.starts) == (1,) and ints_of(op.ends) == (1000,)
    assert ints_of(op.axes) == (0,) and ints_of(op.steps) == (1,)
    assert shape_of(op.output) == (3, 5)
    (op,) = imported(
        "g (float[4,5] x) => (y) <int64[1] s = {-1}, int64[1] e = {-1000}, int64[1] a = {-1}, "
        "int64[1] t = {-2}> { y = Slice(x, s, e, a, t) }",
        opset,
    )
    assert ints_of(op.axes) == (1,) and shape_of(op.output) == (4, 3)


def test_gather_normalizes_constant_negative_indices():
    ops = imported(
        "g (float[5,3] x) => (y) <int64[2] i = {-1, 2}> { y = Gather<axis = 0>(x, i) }", 13
    )
    assert names(ops) == ["graph.constant", "graph.gather"]
    assert list(ops[0].value.get_values()) == [4, 2]
    assert shape_of(ops[1].output) == (2, 3)


def test_gather_with_runtime_indices():
    (op,) = imported(
        "g (float[5,3] x, int64[2,2] i) => (y) { y = Gather<axis = -1>(x, i) }", 13
    )
    assert int_of(op.axis) == 1 and shape_of(op.output) == (5, 2, 2)


def test_pad_attributes_before_opset_11():
    (op,) = imported(
        'g (float[2,3] x) => (y) { y = Pad<pads = [0, 1, 0, 2], mode = "reflect">(x) }', 9
    )
    assert ints_of(op.pads) == (0, 1, 0, 2) and op.mode.data == "reflect"
    assert float_of(op.value) == 0.0 and shape_of(op.output) == (2, 6)


@pytest.mark.parametrize("opset", [11, 13])
def test_pad_inputs(opset: int):
    (op,) = imported(
        "g (float[2,3] x) => (y) <int64[4] p = {1, 0, 1, 0}, float v = {1.5}> { y = Pad(x, p, v) }",
        opset,
    )
    assert ints_of(op.pads) == (1, 0, 1, 0) and float_of(op.value) == 1.5
    assert shape_of(op.output) == (4, 3) and op.mode.data == "constant"


def test_pad_axes_input():
    (op,) = imported(
        "g (float[2,3] x) => (y) <int64[2] p = {1, 2}, int64[1] a = {-1}> { y = Pad(x, p, , a) }",
        NEWEST,
    )
    assert ints_of(op.pads) == (0, 1, 0, 2) and shape_of(op.output) == (2, 6)


def test_pad_wrap_since_opset_19():
    (op,) = imported(
        'g (float[2,3] x) => (y) <int64[4] p = {0, 1, 0, 1}> { y = Pad<mode = "wrap">(x, p) }', 19)
    assert op.mode.data == "wrap" and shape_of(op.output) == (2, 5)


def test_shape_is_a_constant():
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Shape(x) }", 13)
    assert isinstance(op, graph.ConstantOp) and list(op.value.get_values()) == [2, 3, 4]
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Shape<start = 1, end = -1>(x) }", 15)
    assert list(op.value.get_values()) == [3]
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Size(x) }", 13)
    assert list(op.value.get_values()) == [24]


def test_shape_computation_folds_into_reshape():
    """The usual exported `x.view(x.size(0), -1)` pattern leaves only the reshape."""
    ops = imported(
        """g (float[2,3,4] x) => (y) <int64 zero = {0}, int64[1] m1 = {-1}> {
            s = Shape(x)
            n = Gather(s, zero)
            nu = Unsqueeze<axes = [0]>(n)
            t = Concat<axis = 0>(nu, m1)
            y = Reshape(x, t)
        }""",
        11,
    )
    assert names(ops) == ["graph.reshape"] and shape_of(ops[0].output) == (2, 12)


def test_integer_arithmetic_and_where_fold():
    ops = imported(
        """g (float[2,3,4] x) => (y) <int64[1] two = {2}, int64[1] one = {1}, int64[1] m1 = {-1}> {
            s = Shape(x)
            a = Slice(s, one, two)
            b = Mul(a, two)
            c = Div(b, two)
            e = Equal(c, one)
            d = Where(e, one, c)
            t = Concat<axis = 0>(d, m1)
            y = Reshape(x, t)
        }""",
        13,
    )
    assert names(ops) == ["graph.reshape"] and shape_of(ops[0].output) == (3, 8)


def test_fold_only_op_on_runtime_data_is_unsupported(monkeypatch):
    # Equal has a run-time converter now; without it, it is a fold-only op
    from onnxc.frontend import onnx_converters

    monkeypatch.delitem(onnx_converters.CONVERTERS, "Equal")
    with pytest.raises(UnsupportedOpError, match="compile-time constant") as info:
        imported("g (float[2] a, float[2] b) => (y) { y = Equal(a, b) }", 13)
    assert info.value.op_type == "Equal"


def test_expand_multiplies_by_ones():
    ops = imported("g (float[3,1] x) => (y) <int64[3] s = {2, 1, 4}> { y = Expand(x, s) }", 13)
    assert names(ops) == ["graph.constant_of_shape", "graph.mul"]
    assert shape_of(ops[0].output) == (2, 1, 4) and list(ops[0].value.get_values()) == [1.0]
    assert shape_of(ops[1].output) == (2, 3, 4)
    (op,) = imported("g (float[3,2] x) => (y) <int64[1] s = {2}> { y = Expand(x, s) }", 13)
    assert isinstance(op, graph.IdentityOp)


def test_comparison_and_mod_fold_on_constants():
    ops = imported(
        """g (float[6] x) => (y) <int64[1] a = {7}, int64[1] b = {-3}, int64[1] one = {1},
                                  int64[1] m1 = {-1}> {
            m = Mod(a, b)
            f = Mod<fmod = 1>(a, b)
            lb = LessOrEqual(m, f)
            eb = Equal(m, f)
            le = Cast<to = 7>(lb)
            eq = Cast<to = 7>(eb)
            d = Add(le, eq)
            t = Concat<axis = 0>(d, m1)
            y = Reshape(x, t)
        }""",
        13,
    )
    # Mod(7, -3) = -2 and fmod(7, -3) = 1: -2 <= 1 and -2 != 1, so the shape is (1, 6)
    assert names(ops) == ["graph.reshape"] and shape_of(ops[0].output) == (1, 6)
