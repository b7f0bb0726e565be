"""Ops onnxc has no converter for but ONNX defines as a function of other ops (SwiGLU,
CausalConvWithState, LinearAttention, ai.onnx.preview's FlexAttention, ...): each such node
is replaced by the function body its schema gives for the model's opset -- the body of a
context-dependent function is built for the node's attributes and input types, as onnx's
own expanded node tests are -- and imported like any other nodes. onnxruntime does the same
for schema functions it has no kernel for.

Only the top-level graph's nodes are expanded (a node inside a Loop / If / Scan body keeps
its op and is refused as before if nothing converts it).
"""

from __future__ import annotations

from collections.abc import Callable

import onnx
import onnx.inliner
from onnx import defs

from onnxc.errors import ModelLoadError
from onnxc.frontend.onnx_model import infer_types

PRIVATE_DOMAIN = "onnxc.schema_function"
"""Domain of the model-local functions the expansion adds (gone after inlining)."""


def _schema(node: onnx.NodeProto, opsets: dict[str, int]) -> defs.OpSchema | None:
    domain = "" if node.domain == "ai.onnx" else node.domain
    version = opsets.get(domain)
    if version is None:
        return None
    try:
        schema = defs.get_schema(node.op_type, version, domain)
    except defs.SchemaError:
        return None
    return schema if schema.has_function or schema.has_context_dependent_function else None


def defined_by_function(domain: str, op_type: str) -> bool:
    """Whether the newest schema of `op_type` in `domain` is a function of other ops (an op
    without a converter then imports as its body)."""
    try:
        schema = defs.get_schema(op_type, "" if domain == "ai.onnx" else domain)
    except defs.SchemaError:
        return False
    return schema.has_function or schema.has_context_dependent_function


def _body(schema: defs.OpSchema, node: onnx.NodeProto, version: int,
          types: dict[str, onnx.TypeProto]) -> onnx.FunctionProto:
    """The function of `node` (its attributes completed with the schema's defaults, which
    the body may reference) at the newest function version <= the model's opset."""
    given = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():
        if name not in given and attr.default_value.name:
            node.attribute.append(attr.default_value)
    function = onnx.FunctionProto()
    if schema.has_function:
        pick = max(v for v in schema.function_opset_versions if v <= version)
        function.ParseFromString(schema.get_function_with_opset_version(pick))
        return function
    pick = max(v for v in schema.context_dependent_function_opset_versions if v <= version)
    inputs = [types.get(name, onnx.TypeProto()).SerializeToString() for name in node.input]
    function.ParseFromString(schema.get_context_dependent_function_with_opset_version(
        pick, node.SerializeToString(), inputs))
    return function


def expand_schema_functions(model: onnx.ModelProto,
                            converts: Callable[[onnx.NodeProto], bool]) -> onnx.ModelProto:
    """`model` with every top-level node that `converts` refuses and whose op has a schema
    function replaced by that function's body (the model unchanged when there is none)."""
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    todo = [(i, s) for i, node in enumerate(model.graph.node)
            if not converts(node) and (s := _schema(node, opsets)) is not None]
    if not todo:
        return model
    expanded = onnx.ModelProto()
    expanded.CopyFrom(model)
    types = {vi.name: vi.type for vi in model.graph.input}
    types.update(infer_types(model))  # large initializers stay out of the inference
    for init in model.graph.initializer:
        types.setdefault(init.name, onnx.helper.make_tensor_type_proto(init.data_type,
                                                                       list(init.dims)))
    for count, (index, schema) in enumerate(todo):
        node = expanded.graph.node[index]
        domain = "" if node.domain == "ai.onnx" else node.domain
        try:
            body = _body(schema, node, opsets[domain], types)
        except Exception as err:
            raise ModelLoadError(f"node '{node.name or index}' ({node.op_type}): its "
                                 f"schema function could not be built: {err}") from err
        body.name, body.domain = f"{node.op_type}_{count}", PRIVATE_DOMAIN
        body.ClearField("attribute")  # the node's attributes are bound below, as values
        body.ClearField("attribute_proto")
        expanded.functions.append(_bind_attributes(body, node))
        node.op_type, node.domain = body.name, PRIVATE_DOMAIN
        node.ClearField("attribute")
    expanded.opset_import.append(onnx.helper.make_opsetid(PRIVATE_DOMAIN, 1))
    for function in expanded.functions:
        for imported in function.opset_import:
            if (imported.domain or "") not in opsets and imported.domain != PRIVATE_DOMAIN:
                expanded.opset_import.append(imported)
                opsets[imported.domain or ""] = imported.version
    try:
        return onnx.inliner.inline_local_functions(expanded)
    except Exception as err:
        raise ModelLoadError(f"cannot inline the schema functions of ops onnxc has no "
                             f"converter for: {err}") from err


def _bind_attributes(body: onnx.FunctionProto, node: onnx.NodeProto) -> onnx.FunctionProto:
    """`body` with each attribute reference (ref_attr_name, also in subgraphs) replaced by
    the node's value, or dropped when the node has none (the op's default applies)."""
    values = {a.name: a for a in node.attribute}

    def bind(nodes) -> None:
        for inner in nodes:
            kept = []
            for attr in inner.attribute:
                if attr.ref_attr_name:
                    if attr.ref_attr_name in values:
                        bound = onnx.AttributeProto()
                        bound.CopyFrom(values[attr.ref_attr_name])
                        bound.name = attr.name
                        kept.append(bound)
                    continue
                if attr.type == onnx.AttributeProto.GRAPH:
                    bind(attr.g.node)
                for g in attr.graphs:
                    bind(g.node)
                kept.append(attr)
            inner.ClearField("attribute")
            inner.attribute.extend(kept)

    bind(body.node)
    return body
