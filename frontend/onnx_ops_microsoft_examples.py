"""One-node models of the com.microsoft contrib ops onnxc converts, in the forms onnxruntime's
transformer optimizer and quantizers write them (and SimplifiedLayerNormalization, which the
optimizer writes in the default domain): what the op-support matrix (onnxc.tools.op_reference --support) imports to
list the graph ops each becomes, as onnx's one-node test models serve the default domain.
An input wrapped in `Constant` (the quantization ops' scales and zero points, which onnxc
needs known at compile time) is an initializer, the others graph inputs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

_B, _S, _H, _N = 2, 4, 16, 2  # batch, sequence, hidden, heads


def _f(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _i32(values) -> np.ndarray:
    return np.asarray(values, np.int32)


def _ids(shape, bound: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, bound, shape).astype(np.int32)


@dataclass(frozen=True)
class Constant:
    """An input given as an initializer."""

    array: np.ndarray


def _u8(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, shape).astype(np.uint8)


def _qp(scale: float, zero: int = 128) -> list[Constant]:
    """A per-tensor uint8 scale and zero point, as constants."""
    return [Constant(np.array(scale, np.float32)), Constant(np.array(zero, np.uint8))]


_X = _u8(1, 4, 6, 6)
_WEIGHT = Constant(np.random.default_rng(0).integers(-64, 64, (_H, 8)).astype(np.int8))
_W_PARAMS = [Constant(np.array(0.02, np.float32)), Constant(np.array(0, np.int8))]

# op type: (inputs in order, None for an omitted one; attributes; domain)
_FORMS: dict[str, tuple[list[np.ndarray | Constant | None], dict, str]] = {
    "Gelu": ([_f(_B, _S, _H)], {}, "com.microsoft"),
    "FastGelu": ([_f(_B, _S, _H), _f(_H)], {}, "com.microsoft"),
    "BiasGelu": ([_f(_B, _S, _H), _f(_H)], {}, "com.microsoft"),
    "QuickGelu": ([_f(_B, _S, _H)], {"alpha": 1.0}, "com.microsoft"),
    "BiasAdd": ([_f(_B, _S, _H), _f(_H), _f(_B, _S, _H)], {}, "com.microsoft"),
    "SkipLayerNormalization": ([_f(_B, _S, _H), _f(_B, _S, _H), _f(_H), _f(_H), _f(_H)],
                               {"epsilon": 1e-12}, "com.microsoft"),
    "SkipSimplifiedLayerNormalization": ([_f(_B, _S, _H), _f(_B, _S, _H), _f(_H)],
                                         {"epsilon": 1e-6}, "com.microsoft"),
    "SimplifiedLayerNormalization": ([_f(_B, _S, _H), _f(_H)], {"epsilon": 1e-6}, ""),
    "EmbedLayerNormalization": ([_ids((_B, _S), 30), _ids((_B, _S), 2), _f(30, _H), _f(8, _H),
                                 _f(2, _H), _f(_H), _f(_H), _i32(np.ones((_B, _S)))],
                                {"epsilon": 1e-12}, "com.microsoft"),
    "FusedMatMul": ([_f(_B, _N, _S, 8), _f(_B, _N, _S, 8)], {"transB": 1, "alpha": 0.25},
                    "com.microsoft"),
    "FusedConv": ([_f(1, 4, 8, 8), _f(4, 4, 3, 3), _f(4), _f(1, 4, 8, 8)],
                  {"activation": "Relu", "pads": [1, 1, 1, 1]}, "com.microsoft"),
    "FusedGemm": ([_f(_S, _H), _f(_H, 8), _f(8)],
                  {"activation": "LeakyRelu", "activation_alpha": 0.1}, "com.microsoft"),
    "RotaryEmbedding": ([_f(_B, _N, _S, 8), np.zeros((_B, _S), np.int64), _f(16, 4),
                         _f(16, 4)], {}, "com.microsoft"),
    "Attention": ([_f(_B, _S, _H), _f(_H, 3 * _H), _f(3 * _H), _i32([_S] * _B)],
                  {"num_heads": _N}, "com.microsoft"),
    "MultiHeadAttention": ([_f(_B, _S, _H), _f(_B, _S, _H), _f(_B, _S, _H), _f(3 * _H)],
                           {"num_heads": _N}, "com.microsoft"),
    "GroupQueryAttention": ([_f(_B, 1, 4 * 8), _f(_B, 1, 2 * 8), _f(_B, 1, 2 * 8),
                             _f(_B, 2, 3, 8), _f(_B, 2, 3, 8), _i32([3] * _B), _i32(4)],
                            {"num_heads": 4, "kv_num_heads": 2}, "com.microsoft"),
    "QLinearAdd": ([_X, *_qp(0.1), _u8(1, 4, 1, 6), *_qp(0.05), *_qp(0.2)], {},
                   "com.microsoft"),
    "QLinearMul": ([_X, *_qp(0.1), _X, *_qp(0.05), *_qp(0.2)], {}, "com.microsoft"),
    "QLinearSigmoid": ([_X, *_qp(0.1), *_qp(1 / 256, 0)], {}, "com.microsoft"),
    "QLinearLeakyRelu": ([_X, *_qp(0.1), *_qp(0.08)], {"alpha": 0.1}, "com.microsoft"),
    "QLinearConcat": ([*_qp(0.1), _X, *_qp(0.1), _X, *_qp(0.05)], {"axis": 1},
                      "com.microsoft"),
    "QLinearGlobalAveragePool": ([_X, *_qp(0.1), *_qp(0.05)], {}, "com.microsoft"),
    "QLinearAveragePool": ([_X, *_qp(0.1), *_qp(0.05)],
                           {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, "com.microsoft"),
    "QLinearSoftmax": ([_u8(_B, _S), *_qp(0.1), *_qp(1 / 256, 0)], {"opset": 13},
                       "com.microsoft"),
    "QLinearWhere": ([np.ones((1, 6), bool), _X, *_qp(0.1), _X, *_qp(0.05), *_qp(0.1)], {},
                     "com.microsoft"),
    "QGemm": ([_u8(_S, _H), *_qp(0.1), _WEIGHT, *_W_PARAMS,
               Constant(np.zeros(8, np.int32)), *_qp(0.3)], {"alpha": 1.0},
              "com.microsoft"),
    "DynamicQuantizeMatMul": ([_f(_S, _H), _WEIGHT, *_W_PARAMS, _f(8)], {}, "com.microsoft"),
    "MatMulIntegerToFloat": ([_u8(_S, _H), _WEIGHT, Constant(np.array(0.1, np.float32)),
                              _W_PARAMS[0], _qp(0.1)[1], _W_PARAMS[1], _f(8)], {},
                             "com.microsoft"),
    "MatMulNBits": ([_f(_S, 32), Constant(_u8(8, 1, 16)), Constant(_f(8, 1)),
                     Constant(_u8(8, 1) % 16)], {"K": 32, "N": 8, "bits": 4, "block_size": 32},
                    "com.microsoft"),
    # standard ops under onnxruntime's name (onnx_ops_microsoft_standard.py)
    "GatherND": ([_f(3, 4, 5), Constant(np.array([[0, 1], [2, 3]], np.int64))], {},
                 "com.microsoft"),
    "GridSample": ([_f(1, 2, 5, 6), _f(1, 3, 4, 2)], {"align_corners": 1}, "com.microsoft"),
    "Trilu": ([_f(2, 4, 5)], {"upper": 0}, "com.microsoft"),
    "QuantizeLinear": ([_f(2, 6), *_qp(0.1)], {}, "com.microsoft"),
    "DequantizeLinear": ([_u8(2, 6), *_qp(0.1)], {}, "com.microsoft"),
    "TransposeMatMul": ([_f(_B, 8, _S), _f(_B, 8, _S)], {"transA": 1}, "com.microsoft"),
    "ExpandDims": ([_f(_B, _S), Constant(np.array(1, np.int32))], {}, "com.microsoft"),
    "Pad": ([_f(_B, _S), Constant(np.array([0, 1, 0, 2], np.int64))], {}, "com.microsoft"),
    "Range": ([Constant(np.array(0, np.int64)), Constant(np.array(6, np.int64)),
               Constant(np.array(2, np.int64))], {}, "com.microsoft"),
    "Unique": ([_f(8)], {}, "com.microsoft"),
    "NhwcMaxPool": ([_u8(1, 6, 6, 4)], {"kernel_shape": [2, 2], "strides": [2, 2]},
                    "com.microsoft"),
    "QLinearConv": ([_X, *_qp(0.1), Constant(np.random.default_rng(0).integers(
                         -64, 64, (4, 4, 3, 3)).astype(np.int8)), *_W_PARAMS, *_qp(0.2)],
                    {"pads": [1, 1, 1, 1]}, "com.microsoft"),
    "ConvTransposeWithDynamicPads": ([_f(1, 2, 5, 5), Constant(_f(2, 3, 3, 3)),
                                      Constant(np.array([1, 1, 1, 1], np.int64))],
                                     {"strides": [2, 2]}, "com.microsoft"),
    "MatMulInteger16": ([np.ones((_S, _H), np.int16), Constant(np.ones((_H, 8), np.int16))],
                        {}, "com.microsoft"),
    "CDist": ([_f(5, 8), _f(7, 8)], {"metric": "euclidean"}, "com.microsoft"),
    "UnfoldTensor": ([_f(6, 7)], {"dim": 1, "size": 3, "step": 2}, "com.microsoft"),
    "ScaledSiLU": ([_f(_B, _H)], {"alpha": 1.5}, "com.microsoft"),
    "CropAndResize": ([_f(1, 3, 7, 9), _f(2, 4), Constant(_i32([0, 0])),
                       Constant(_i32([3, 4]))], {}, "com.microsoft"),
    "Inverse": ([_f(_B, 3, 3)], {}, "com.microsoft"),
    # what quantize_dynamic writes (onnx_ops_microsoft_dynamic_quant.py)
    "QAttention": ([_u8(_B, _S, _H), Constant(np.random.default_rng(0).integers(
                        -64, 64, (_H, 3 * _H)).astype(np.int8)), _f(3 * _H),
                    Constant(np.array(0.02, np.float32)), *_W_PARAMS[:1], None,
                    Constant(np.array(128, np.uint8)), _W_PARAMS[1]],
                   {"num_heads": _N}, "com.microsoft"),
    "QEmbedLayerNormalization": ([_ids((_B, _S), 30), _ids((_B, _S), 2),
                                  Constant(_u8(30, _H)), Constant(_u8(8, _H)),
                                  Constant(_u8(2, _H)), Constant(_u8(_H)), Constant(_u8(_H)),
                                  _i32(np.ones((_B, _S))),
                                  *[Constant(np.array(0.01, np.float32))] * 5,
                                  *[Constant(np.array(128, np.uint8))] * 5],
                                 {"epsilon": 1e-12}, "com.microsoft"),
    "DynamicQuantizeLSTM": ([_f(_S, _B, 8), Constant(np.random.default_rng(0).integers(
                                 -64, 64, (1, 8, 4 * 6)).astype(np.int8)),
                             Constant(np.random.default_rng(1).integers(
                                 -64, 64, (1, 6, 4 * 6)).astype(np.int8)),
                             None, None, None, None, None,
                             Constant(np.array([0.02], np.float32)),
                             Constant(np.array([0], np.int8)),
                             Constant(np.array([0.02], np.float32)),
                             Constant(np.array([0], np.int8))],
                            {"hidden_size": 6}, "com.microsoft"),
    "GatherBlockQuantized": ([Constant(_u8(6, 16)), _ids((2, 3), 6).astype(np.int64),
                              Constant(_f(6, 1))], {"block_size": 32}, "com.microsoft"),
}


def example(op_type: str) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """A one-node model of `op_type` (its inputs graph inputs) and values for them."""
    inputs, attrs, domain = _FORMS[op_type]
    names = [f"x{i}" if value is not None else "" for i, value in enumerate(inputs)]
    given = [(n, v) for n, v in zip(names, inputs)
             if v is not None and not isinstance(v, Constant)]
    constants = [numpy_helper.from_array(v.array, n) for n, v in zip(names, inputs)
                 if isinstance(v, Constant)]
    node = helper.make_node(op_type, names, ["y"], domain=domain or None, **attrs)
    graph = helper.make_graph(
        [node], op_type.lower(),
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in given],
        [helper.make_empty_tensor_value_info("y")], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model, [v for _, v in given]


def examples() -> dict[tuple[str, str], list[tuple[onnx.ModelProto, list[np.ndarray]]]]:
    """(domain, op type) -> [(a one-node model, its inputs)], as the op-support matrix reads
    onnx's node test cases."""
    return {(domain, op): [example(op)] for op, (_, _, domain) in _FORMS.items()}
