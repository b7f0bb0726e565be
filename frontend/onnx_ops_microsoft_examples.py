"""One-node models of the com.microsoft contrib ops onnxc converts, in the forms onnxruntime's
transformer optimizer writes them (and SimplifiedLayerNormalization, which it writes in the
default domain): what the op-support matrix (onnxc.tools.op_reference --support) imports to
list the graph ops each becomes, as onnx's one-node test models serve the default domain."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

_B, _S, _H, _N = 2, 4, 16, 2  # batch, sequence, hidden, heads


def _f(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _i32(values) -> np.ndarray:
    return np.asarray(values, np.int32)


def _ids(shape, bound: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, bound, shape).astype(np.int32)


# op type: (inputs in order, None for an omitted one; attributes; domain)
_FORMS: dict[str, tuple[list[np.ndarray | None], dict, str]] = {
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
}


def example(op_type: str) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """A one-node model of `op_type` (its inputs graph inputs) and values for them."""
    inputs, attrs, domain = _FORMS[op_type]
    names = [f"x{i}" if value is not None else "" for i, value in enumerate(inputs)]
    given = [(n, v) for n, v in zip(names, inputs) if v is not None]
    node = helper.make_node(op_type, names, ["y"], domain=domain or None, **attrs)
    graph = helper.make_graph(
        [node], op_type.lower(),
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
         for n, v in given],
        [helper.make_empty_tensor_value_info("y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model, [v for _, v in given]


def examples() -> dict[tuple[str, str], list[tuple[onnx.ModelProto, list[np.ndarray]]]]:
    """(domain, op type) -> [(a one-node model, its inputs)], as the op-support matrix reads
    onnx's node test cases."""
    return {(domain, op): [example(op)] for op, (_, _, domain) in _FORMS.items()}
