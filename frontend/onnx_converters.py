"""Every ONNX converter, by operator domain and op type, and the checks that a model holds
only ops and graph inputs/outputs they take (run before any other import work).

The default domain's table merges the op families' `CONVERTERS` (frontend/onnx_ops_*.py);
com.microsoft's holds the contrib ops onnxruntime's tools write (onnx_ops_microsoft*.py,
the quantization ones in onnx_ops_microsoft_quant.py), ai.onnx.ml's the classic-ML ops
(onnx_ops_ml.py, tree ensembles in onnx_ops_ml_trees.py),
whose converters see that domain's opset version as `ctx.opset`. An op is one entry here,
through its family's table.
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx

from onnxc.errors import UnsupportedOpError
from onnxc.frontend import (
    onnx_ops_activation,
    onnx_ops_attention,
    onnx_ops_control,
    onnx_ops_detection,
    onnx_ops_einsum,
    onnx_ops_experimental,
    onnx_ops_generate,
    onnx_ops_linalg,
    onnx_ops_logic,
    onnx_ops_loss,
    onnx_ops_math,
    onnx_ops_microsoft,
    onnx_ops_microsoft_attention,
    onnx_ops_microsoft_dynamic_quant,
    onnx_ops_microsoft_gather_quant,
    onnx_ops_microsoft_nbits,
    onnx_ops_microsoft_quant,
    onnx_ops_microsoft_standard,
    onnx_ops_ml,
    onnx_ops_ml_trees,
    onnx_ops_movement,
    onnx_ops_ngram,
    onnx_ops_nn,
    onnx_ops_normalization,
    onnx_ops_qlinear,
    onnx_ops_quant,
    onnx_ops_random,
    onnx_ops_reduce,
    onnx_ops_rnn,
    onnx_ops_rotary,
    onnx_ops_sequence,
    onnx_ops_spectral,
    onnx_ops_strings,
    onnx_ops_tensor,
    onnx_ops_unique,
    onnx_ops_vision,
)
from onnxc.frontend.onnx_fold import FOLDERS
from onnxc.frontend.onnx_model import (
    DEFAULT_DOMAINS,
    all_nodes,
    check_domains,
    check_ir_version,
    check_names,
    default_opset,
    inline_functions,
    node_label,
)
from onnxc.frontend.onnx_refused import refusal_reason
from onnxc.frontend.onnx_schema_functions import expand_schema_functions

CONVERTERS = {
    **onnx_ops_math.CONVERTERS,
    **onnx_ops_activation.CONVERTERS,
    **onnx_ops_nn.CONVERTERS,
    **onnx_ops_tensor.CONVERTERS,
    **onnx_ops_reduce.CONVERTERS,
    **onnx_ops_einsum.CONVERTERS,
    **onnx_ops_generate.CONVERTERS,
    **onnx_ops_logic.CONVERTERS,
    **onnx_ops_movement.CONVERTERS,
    **onnx_ops_vision.CONVERTERS,
    **onnx_ops_quant.CONVERTERS,
    **onnx_ops_qlinear.CONVERTERS,
    **onnx_ops_attention.CONVERTERS,
    **onnx_ops_rotary.CONVERTERS,
    **onnx_ops_rnn.CONVERTERS,
    **onnx_ops_loss.CONVERTERS,
    **onnx_ops_normalization.CONVERTERS,
    **onnx_ops_control.CONVERTERS,
    **onnx_ops_sequence.CONVERTERS,
    **onnx_ops_strings.CONVERTERS,
    **onnx_ops_spectral.CONVERTERS,
    **onnx_ops_random.CONVERTERS,
    **onnx_ops_detection.CONVERTERS,
    **onnx_ops_unique.CONVERTERS,
    **onnx_ops_experimental.CONVERTERS,
    **onnx_ops_ngram.CONVERTERS,
    **onnx_ops_linalg.CONVERTERS,
    **onnx_ops_microsoft.ONNX_DOMAIN_CONVERTERS,
}
"""The default domain's converters by op type (with the contrib ops onnxruntime registers in
that domain, e.g. SimplifiedLayerNormalization)."""

DOMAIN_CONVERTERS: dict[str, Mapping[str, onnx_ops_math.Converter]] = {
    "": CONVERTERS,
    "com.microsoft": {
        **onnx_ops_microsoft.CONVERTERS,
        **onnx_ops_microsoft_attention.CONVERTERS,
        **onnx_ops_microsoft_quant.CONVERTERS,
        **onnx_ops_microsoft_gather_quant.CONVERTERS,
        **onnx_ops_linalg.MICROSOFT_CONVERTERS,
        **onnx_ops_microsoft_dynamic_quant.CONVERTERS,
        **onnx_ops_microsoft_standard.CONVERTERS,
        **onnx_ops_microsoft_nbits.CONVERTERS,
    },
    "ai.onnx.ml": {
        **onnx_ops_ml.CONVERTERS,
        **onnx_ops_ml_trees.CONVERTERS,
    },
}
"""Converters by operator domain ("" for ai.onnx), then op type."""


def converter_for(domain: str, op_type: str) -> onnx_ops_math.Converter | None:
    """The converter of `op_type` in `domain` ("" or "ai.onnx" for the default one)."""
    table = DOMAIN_CONVERTERS.get("" if domain == "ai.onnx" else domain, {})
    return table.get(op_type)



def _converts(node: onnx.NodeProto) -> bool:
    return converter_for(node.domain, node.op_type) is not None or (
        node.domain in DEFAULT_DOMAINS and node.op_type in FOLDERS)


def checked_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its functions inlined, after the checks every import starts with: an IR
    version onnx knows, names defined once, operator domains and opset versions known, every
    op type convertible (ModelLoadError or UnsupportedOpError otherwise, before any other
    work)."""
    check_names(model.graph)  # first: says when the bytes were empty or truncated
    check_ir_version(model)
    model = inline_functions(model)
    model = expand_schema_functions(model, _converts)
    check_domains(model, {d: table for d, table in DOMAIN_CONVERTERS.items() if d})
    check_op_types(model.graph, default_opset(model))
    check_io_types(model.graph, default_opset(model))
    return model


def check_io_types(graph: onnx.GraphProto, opset: int) -> None:
    """Graph inputs and outputs must be tensors: sequences and optionals exist only inside a
    model, as compile-time lists (onnx_ops_sequence.py)."""
    for kind, vis in (("graph input", graph.input), ("graph output", graph.output)):
        for vi in vis:
            which = vi.type.WhichOneof("value")
            if which not in (None, "tensor_type"):
                what = which.removesuffix("_type")
                raise UnsupportedOpError(kind, vi.name, opset,
                                         f"{'an' if what[0] in 'aeiou' else 'a'} {what}: "
                                         f"onnxc's inputs and outputs are tensors")


def check_op_types(graph: onnx.GraphProto, opset: int) -> None:
    """Report unsupported ops of the default domain before any work (all distinct ones in
    the message; other domains: check_domains)."""
    missing: dict[str, str] = {}
    for index, node in enumerate(all_nodes(graph)):
        if node.domain not in DEFAULT_DOMAINS:
            continue
        if node.op_type not in CONVERTERS and node.op_type not in FOLDERS:
            missing.setdefault(node.op_type, node_label(node, index))
    if missing:
        (op_type, label), *others = missing.items()
        detail = refusal_reason("", op_type) or "the graph dialect has no equivalent"
        if others:
            detail += "; also unsupported: " + ", ".join(o for o, _ in others)
        raise UnsupportedOpError(op_type, label, opset, detail)
