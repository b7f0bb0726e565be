"""Importer tests for Conv, pooling, BatchNormalization, LRN, Softmax and Dropout."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import i1

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.errors import UnsupportedOpError
from tests.ir_helpers import imported_ops

NEWEST = 28


def imported(text: str, opset: int) -> list:
    return imported_ops(text, opset)


def names(ops) -> list[str]:
    return [op.name for op in ops]


def conv(attrs: str, opset: int = 13, x: str = "[1,3,7,7]", w: str = "[8,3,3,3]"):
    ops = imported(f"g (float{x} x, float{w} w) => (y) {{ y = Conv{attrs}(x, w) }}", opset)
    (op,) = ops
    assert isinstance(op, graph.ConvOp)
    return op


@pytest.mark.parametrize("opset", [9, 11, NEWEST])
def test_conv_defaults_are_filled_in(opset: int):
    op = conv("", opset)
    assert ints_of(op.strides) == (1, 1) and ints_of(op.dilations) == (1, 1)
    assert ints_of(op.pads) == (0, 0, 0, 0) and int_of(op.group) == 1
    assert op.bias is None and shape_of(op.output) == (1, 8, 5, 5)


@pytest.mark.parametrize(
    ("auto_pad", "pads", "out"),
    [("SAME_UPPER", (0, 0, 1, 1), (4, 4)), ("SAME_LOWER", (1, 1, 0, 0), (4, 4)),
     ("VALID", (0, 0, 0, 0), (3, 3))],
)
def test_conv_auto_pad_becomes_explicit_pads(auto_pad, pads, out):
    op = conv(f'<auto_pad = "{auto_pad}", strides = [2, 2]>', x="[1,3,8,8]", w="[8,3,3,3]")
    assert ints_of(op.pads) == pads
    assert shape_of(op.output)[2:] == out


def test_conv_same_upper_odd_total_padding_and_dilation():
    op = conv('<auto_pad = "SAME_UPPER", dilations = [3, 3]>', x="[1,3,7,7]", w="[8,3,2,2]")
    assert ints_of(op.pads) == (1, 1, 2, 2) and shape_of(op.output) == (1, 8, 7, 7)


def test_conv_group_bias_and_1d():
    (op,) = imported(
        "g (float[1,4,10] x, float[6,2,3] w, float[6] b) => (y) "
        "{ y = Conv<group = 2, pads = [1, 1], strides = [2]>(x, w, b) }",
        11,
    )
    assert int_of(op.group) == 2 and op.bias is not None
    assert shape_of(op.output) == (1, 6, 5)


def test_max_pool_defaults_and_ceil_mode():
    (op,) = imported("g (float[1,2,5,5] x) => (y) { y = MaxPool<kernel_shape = [2, 2]>(x) }", 9)
    assert isinstance(op, graph.MaxPoolOp)
    assert ints_of(op.strides) == (1, 1) and ints_of(op.dilations) == (1, 1)
    assert int_of(op.ceil_mode) == 0 and shape_of(op.output) == (1, 2, 4, 4)
    (op,) = imported(
        "g (float[1,2,5,5] x) => (y) "
        "{ y = MaxPool<kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1>(x) }",
        10,
    )
    assert int_of(op.ceil_mode) == 1 and shape_of(op.output) == (1, 2, 3, 3)


def test_max_pool_dilations_and_auto_pad():
    (op,) = imported(
        "g (float[1,1,8,8] x) => (y) { y = MaxPool<kernel_shape = [3, 3], dilations = [2, 2], "
        'auto_pad = "SAME_UPPER">(x) }',
        NEWEST,
    )
    assert ints_of(op.pads) == (2, 2, 2, 2) and shape_of(op.output) == (1, 1, 8, 8)


def test_max_pool_indices_output():
    (op,) = imported(
        "g (float[1,1,4,4] x) => (y, i) { y, i = MaxPool<kernel_shape = [2, 2]>(x) }", 12
    )
    assert op.name == "graph.max_pool_indices" and shape_of(op.indices) == (1, 1, 3, 3)


def test_max_pool_storage_order_without_indices_is_fine():
    (op,) = imported(
        "g (float[1,1,4,4] x) => (y) { y = MaxPool<kernel_shape = [2, 2], storage_order = 1>(x) }",
        12,
    )
    assert isinstance(op, graph.MaxPoolOp)


@pytest.mark.parametrize("opset", [9, 11, NEWEST])
def test_average_pool(opset: int):
    (op,) = imported(
        "g (float[1,2,6,6] x) => (y) { y = AveragePool<kernel_shape = [3, 3], strides = [2, 2], "
        "pads = [1, 1, 1, 1], count_include_pad = 1>(x) }",
        opset,
    )
    assert isinstance(op, graph.AveragePoolOp)
    assert int_of(op.count_include_pad) == 1 and shape_of(op.output) == (1, 2, 3, 3)


def test_average_pool_with_dilations():
    (op,) = imported(
        "g (float[1,1,8,8] x) => (y) "
        "{ y = AveragePool<kernel_shape = [2, 2], dilations = [2, 2]>(x) }",
        19,
    )
    assert op.window_dilations() == (2, 2) and shape_of(op.output) == (1, 1, 6, 6)


@pytest.mark.parametrize(("op_type", "cls"), [("GlobalAveragePool", graph.GlobalAveragePoolOp),
                                              ("GlobalMaxPool", graph.GlobalMaxPoolOp)])
def test_global_pools(op_type, cls):
    (op,) = imported(f"g (float[2,3,5,7] x) => (y) {{ y = {op_type}(x) }}", 13)
    assert isinstance(op, cls) and shape_of(op.output) == (2, 3, 1, 1)


BN_INPUTS = "float[2,3,4,4] x, float[3] s, float[3] b, float[3] m, float[3] v"


@pytest.mark.parametrize("opset", [7, 9, 14, 15, NEWEST])
def test_batch_norm(opset: int):
    (op,) = imported(
        f"g ({BN_INPUTS}) => (y) {{ y = BatchNormalization<epsilon = 0.001>(x, s, b, m, v) }}",
        opset,
    )
    assert isinstance(op, graph.BatchNormalizationOp)
    assert float_of(op.epsilon) == pytest.approx(0.001)


def test_batch_norm_default_epsilon_and_old_is_test():
    (op,) = imported(
        f"g ({BN_INPUTS}) => (y) {{ y = BatchNormalization<is_test = 1>(x, s, b, m, v) }}", 6
    )
    assert float_of(op.epsilon) == pytest.approx(1e-5)


def test_batch_norm_training_mode_normalizes_by_the_batch_statistics():
    ops = imported(
        f"g ({BN_INPUTS}) => (y) "
        "{ y = BatchNormalization<training_mode = 1>(x, s, b, m, v) }",
        14,
    )
    assert "graph.reduce_mean" in names(ops) and "graph.batch_normalization" not in names(ops)


def test_batch_norm_statistics_outputs_are_unsupported():
    with pytest.raises(UnsupportedOpError, match="mean/variance"):
        imported(
            f"g ({BN_INPUTS}) => (y, rm) {{ y, rm = BatchNormalization(x, s, b, m, v) }}", 9
        )


def test_batch_norm_per_activation_is_decomposed():
    ops = imported(
        "g (float[2,3,4] x, float[3,4] s, float[3,4] b, float[3,4] m, float[3,4] v) => (y) "
        "{ y = BatchNormalization<spatial = 0>(x, s, b, m, v) }",
        7,
    )
    assert names(ops) == ["graph.constant", "graph.add", "graph.sqrt", "graph.sub", "graph.div",
                          "graph.mul", "graph.add"]
    assert shape_of(ops[-1].output) == (2, 3, 4)


def test_lrn():
    (op,) = imported("g (float[1,5,3,3] x) => (y) { y = LRN<size = 3>(x) }", 13)
    assert isinstance(op, graph.LRNOp) and int_of(op.size) == 3
    assert float_of(op.alpha) == pytest.approx(1e-4) and float_of(op.beta) == 0.75
    assert float_of(op.bias) == 1.0


LOG_SOFTMAX_OPS = ["graph.reduce_max", "graph.sub", "graph.exp", "graph.reduce_sum",
                   "graph.log", "graph.sub"]
"""(x - max) - log(sum(exp(x - max))): log(softmax) would underflow to -inf."""


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [9, 11])
def test_softmax_before_13_coerces_to_2d(op_type: str, opset: int):
    ops = imported(f"g (float[2,3,4] x) => (y) {{ y = {op_type}(x) }}", opset)
    expected = ["graph.flatten"]
    expected += LOG_SOFTMAX_OPS if op_type == "LogSoftmax" else ["graph.softmax"]
    assert names(ops) == expected + ["graph.reshape"]
    assert int_of(ops[0].axis) == 1 and shape_of(ops[0].output) == (2, 12)
    if op_type == "Softmax":
        assert int_of(ops[1].axis) == 1
    else:
        assert list(ops[1].reduced_axes()) == [1]
    assert shape_of(ops[-1].output) == (2, 3, 4)


def test_softmax_before_13_on_last_axis_needs_no_reshape():
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Softmax<axis = 2>(x) }", 11)
    assert isinstance(op, graph.SoftmaxOp) and int_of(op.axis) == 2
    (op,) = imported("g (float[2,3] x) => (y) { y = Softmax(x) }", 9)
    assert int_of(op.axis) == 1


def test_softmax_before_13_axis_0():
    ops = imported("g (float[2,3] x) => (y) { y = Softmax<axis = 0>(x) }", 11)
    assert names(ops) == ["graph.flatten", "graph.softmax", "graph.reshape"]
    assert shape_of(ops[0].output) == (1, 6)


@pytest.mark.parametrize("opset", [13, NEWEST])
def test_softmax_13_default_axis_is_last(opset: int):
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Softmax(x) }", opset)
    assert int_of(op.axis) == 2
    (op,) = imported("g (float[2,3,4] x) => (y) { y = Softmax<axis = -2>(x) }", opset)
    assert int_of(op.axis) == 1


def test_log_softmax_13():
    ops = imported("g (float[2,3,4] x) => (y) { y = LogSoftmax<axis = 1>(x) }", 13)
    assert names(ops) == LOG_SOFTMAX_OPS
    assert list(ops[0].reduced_axes()) == [1] and list(ops[3].reduced_axes()) == [1]


def test_dropout_ratio_attribute():
    (op,) = imported("g (float[4] x) => (y) { y = Dropout<ratio = 0.3>(x) }", 9)
    assert isinstance(op, graph.DropoutOp) and float_of(op.ratio) == pytest.approx(0.3)


@pytest.mark.parametrize("opset", [12, 13, NEWEST])
def test_dropout_ratio_input(opset: int):
    (op,) = imported("g (float[4] x) => (y) <float r = {0.25}> { y = Dropout(x, r) }", opset)
    assert float_of(op.ratio) == 0.25
    (op,) = imported("g (float[4] x) => (y) { y = Dropout(x) }", opset)
    assert op.ratio is None


def test_dropout_training_mode_draws_its_mask():
    ops = imported(
        "g (float[4] x) => (y) <float r = {0.5}, bool t = {1}> { y = Dropout(x, r, t) }", 13
    )
    assert "graph.random" in names(ops) and "graph.dropout" not in names(ops)


def test_dropout_mask_is_all_true():
    ops = imported("g (float[4] x) => (y, m) { y, m = Dropout(x) }", 13)
    assert names(ops) == ["graph.dropout", "graph.constant_of_shape"]
    assert ops[1].output.type.get_element_type() == i1
    assert list(ops[1].value.get_values()) == [1]


def test_dropout_with_runtime_ratio_ignores_it():
    (op,) = imported("g (float[4] x, float r) => (y) { y = Dropout(x, r) }", 13)
    assert isinstance(op, graph.DropoutOp) and op.ratio is None
