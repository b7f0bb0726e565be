"""ONNX models of one op (or a few nodes) for tests, and running one against a reference.

An op test states the op, its inputs, attributes and constants; this module writes the
`ModelProto` around them, the same way for every test, so the model a test compiles is
what the test says and nothing a private builder added:

    model = single_op_model("Resize", {"x": (np.float32, [1, 2, "h", "w"])},
                            initializers={"scales": np.array([1, 1, 2, 2], np.float32)},
                            node_inputs=["x", "", "scales"], attrs={"mode": "linear"},
                            opset=19, ir_version=8)
    got, expected = run_both(model, {"x": x}, rtol=1e-5, atol=1e-5)

Inputs and outputs are given as `{name: spec}`, a spec being
- `(dtype, shape)`: dtype a numpy dtype (or anything `np.dtype` takes, ml_dtypes' too) or a
  `TensorProto` element type; shape a list of ints and `dim_param` strings, or None for a
  tensor of unknown rank;
- a numpy array: its dtype and shape;
- None (outputs only): the name alone, no type (onnxc and onnxruntime infer it);
- a ValueInfoProto already made, used as it is.
Outputs may also be a list of names (each with no type), and `graph_model`'s inputs and
outputs a list of ValueInfoProtos. Initializers are `{name: array}`
(or a TensorProto, used as it is): constants, not graph inputs (None: an omitted optional
input, `""` in the node). The node's inputs are the graph inputs then the initializers, in
the order given, unless `node_inputs` lists them (`""` for an omitted optional input).
`numbered([a, b])` names arrays x0, x1, ...

`check_single_op` is the one-node check of tests/unit/ops/: onnxc and onnxc's numpy evaluator
against onnx.reference (or onnxruntime).

Nothing here is implicit: the opset (17 unless given), the IR version (onnx's current unless
given; 8 or 9 where onnxruntime must load the model) and shape inference (off unless asked)
are arguments, so a model built here is byte-for-byte the one a test built by hand before.
Import it as `from tests.single_op import single_op_model, run_both` (pytest's importlib
mode makes `tests` a namespace package; tests/ir_helpers.py is imported the same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

Spec = tuple[Any, Sequence[int | str] | None] | np.ndarray | None
"""(dtype, shape), an array (its dtype and shape), or None (a name with no type)."""


def elem_type(dtype) -> int:
    """The TensorProto element type of a numpy dtype (or of a TensorProto type, unchanged)."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        return int(dtype)
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def value_info(name: str, spec: Spec) -> onnx.ValueInfoProto:
    """A graph input or output: typed by `spec` (see the module docstring)."""
    if spec is None:
        return helper.make_empty_tensor_value_info(name)
    if isinstance(spec, onnx.ValueInfoProto):
        return spec
    if isinstance(spec, np.ndarray):
        return helper.make_tensor_value_info(name, elem_type(spec.dtype), spec.shape)
    dtype, shape = spec
    return helper.make_tensor_value_info(name, elem_type(dtype),
                                         None if shape is None else list(shape))


def _value_infos(specs: Mapping[str, Spec] | Sequence[str | onnx.ValueInfoProto]) -> list:
    if isinstance(specs, Mapping):
        return [value_info(n, s) for n, s in specs.items()]
    return [s if isinstance(s, onnx.ValueInfoProto) else value_info(s, None) for s in specs]


def numbered(arrays: Sequence[np.ndarray | None], prefix: str = "x") -> dict:
    """`{"x0": arrays[0], "x1": arrays[1], ...}`: a list of inputs (or constants, with
    prefix "c") as the dictionary `single_op_model` and `run_both` take."""
    return {f"{prefix}{i}": a for i, a in enumerate(arrays)}


def graph_model(nodes: Sequence[onnx.NodeProto],
                inputs: Mapping[str, Spec] | Sequence[onnx.ValueInfoProto],
                outputs: Mapping[str, Spec] | Sequence[str | onnx.ValueInfoProto], *,
                initializers: Mapping[str, Any] | Sequence[onnx.TensorProto] | None = None,
                opset: int | Mapping[str, int] | None = 17, ir_version: int | None = None,
                name: str = "g", infer_shapes: bool | str = False) -> onnx.ModelProto:
    """A model of `nodes` with graph inputs `inputs`, outputs `outputs` and constant
    `initializers` (a dictionary, or a list of TensorProtos kept as they are, duplicates
    included).

    `opset` is the default domain's version, or `{domain: version}` for several domains, or
    None for `helper.make_model`'s default (onnx's newest opset); `infer_shapes` runs onnx's
    shape inference on the result (`"strict"`: in strict mode)."""
    if isinstance(initializers, Mapping):
        tensors = [v if isinstance(v, onnx.TensorProto)
                   else numpy_helper.from_array(np.asarray(v), n)
                   for n, v in initializers.items() if v is not None]
    else:
        tensors = list(initializers or ())
    graph = helper.make_graph(list(nodes), name, _value_infos(inputs), _value_infos(outputs),
                              tensors)
    if opset is None:
        model = helper.make_model(graph)
    else:
        opsets = {"": opset} if isinstance(opset, int) else dict(opset)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    if ir_version is not None:
        model.ir_version = ir_version
    if infer_shapes:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=infer_shapes == "strict")
    return model


def single_op_model(op_type: str, inputs: Mapping[str, Spec],
                    outputs: Mapping[str, Spec] | Sequence[str] = ("y",), *,
                    attrs: Mapping[str, Any] | None = None,
                    initializers: Mapping[str, np.ndarray] | None = None,
                    node_inputs: Sequence[str] | None = None,
                    node_outputs: Sequence[str] | None = None,
                    opset: int | Mapping[str, int] | None = 17, domain: str = "",
                    ir_version: int | None = None, node_name: str | None = None,
                    graph_name: str | None = None,
                    infer_shapes: bool | str = False) -> onnx.ModelProto:
    """A model of one `op_type` node (in `domain`) reading `inputs` and `initializers` (or
    `node_inputs`, in that order, `""` for an omitted input) and writing `outputs` (or
    `node_outputs`, `""` for an optional output the graph does not return).

    The graph is named after the op (lower case) unless `graph_name` says otherwise; the
    rest is as in `graph_model`."""
    initializers = dict(initializers or {})
    if isinstance(inputs, Mapping):  # a name given as both is a constant, not a graph input
        inputs = {n: spec for n, spec in inputs.items() if n not in initializers}
    if node_inputs is None:
        node_inputs = ([n for n in inputs if n not in initializers]
                       + [n if v is not None else "" for n, v in initializers.items()])
    out_names = list(outputs) if node_outputs is None else list(node_outputs)
    node = helper.make_node(op_type, list(node_inputs), out_names, name=node_name,
                            domain=domain or None, **dict(attrs or {}))
    return graph_model([node], inputs, outputs, initializers=initializers, opset=opset,
                       ir_version=ir_version, name=graph_name or op_type.lower(),
                       infer_shapes=infer_shapes)


def reference_run(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
                  reference: str = "onnxruntime") -> list[np.ndarray]:
    """`model`'s outputs on `feeds` by onnxruntime (CPU) or by onnx.reference."""
    if reference == "onnxruntime":
        import onnxruntime as ort

        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        return session.run(None, dict(feeds))
    if reference == "onnx":
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(model).run(None, dict(feeds))
    raise ValueError(f"reference is 'onnxruntime' or 'onnx', not {reference!r}")


def assert_same_outputs(got: Sequence[np.ndarray], expected: Sequence[np.ndarray], *,
                        rtol: float = 1e-5, atol: float = 1e-6, exact: bool = False,
                        check_dtype: bool = True) -> None:
    """Output by output: the same shape (and dtype), values equal (`exact`) or within
    `rtol`/`atol`; NaN where the reference has NaN."""
    assert len(got) == len(expected), (len(got), len(expected))
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape, f"output {i}: shape {g.shape} != {e.shape}"
        if check_dtype:
            assert g.dtype == e.dtype, f"output {i}: dtype {g.dtype} != {e.dtype}"
        if exact:
            np.testing.assert_array_equal(g, e, err_msg=f"output {i}")
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {i}")


def run_both(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], *,
             rtol: float = 1e-5, atol: float = 1e-6, exact: bool = False,
             reference: str = "onnxruntime", check_dtype: bool = True,
             **compile_options) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Compile `model` with onnxc (`compile_options`, e.g. opt_level=0, cache_dir=False),
    run it and the reference (onnxruntime, or `reference="onnx"`) on `feeds`, and assert the
    outputs agree (`assert_same_outputs`). Returns (onnxc's outputs, the reference's)."""
    import onnxc

    expected = reference_run(model, feeds, reference)
    got = onnxc.compile(model, **compile_options).run(None, dict(feeds))
    assert_same_outputs(got, expected, rtol=rtol, atol=atol, exact=exact,
                        check_dtype=check_dtype)
    return got, expected


def check_single_op(op_type: str, inputs: Sequence[np.ndarray],
                    consts: Sequence[np.ndarray | None] = (), attrs: Mapping | None = None, *,
                    opset: int = 21, exact: bool = False, rtol: float = 1e-4,
                    atol: float = 1e-5, reference: str = "onnx") -> onnx.ModelProto:
    """One `op_type` node of runtime inputs x0.. and constant inputs c0.. (initializers,
    None: omitted), shapes inferred, compiled by onnxc and evaluated by onnxc's numpy
    evaluator on the imported graph (constant folding, --verify-numerics), both against
    onnx.reference (or onnxruntime, at IR version <= 10): the same shape and dtype, values
    equal (`exact`: data movement) or within rtol/atol (default: float32 accumulation in
    another order than the reference's float64). Returns the model."""
    import onnxc
    from onnxc.frontend.onnx_importer import import_onnx
    from onnxc.passes.evaluator import evaluate

    model = single_op_model(op_type, numbered(inputs), attrs=attrs,
                            initializers=numbered(consts, "c"), opset=opset, infer_shapes=True)
    feeds = numbered(inputs)
    if reference == "onnxruntime":
        model.ir_version = min(model.ir_version, 10)
    (expected,) = reference_run(model, feeds, reference)
    (got,) = onnxc.compile(model).run(None, feeds)
    (evaluated,) = evaluate(import_onnx(model), feeds)
    for result in (got, evaluated):
        assert_same_outputs([result], [expected], rtol=rtol, atol=atol, exact=exact)
    return model
