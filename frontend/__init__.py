"""The ONNX frontend: ONNX models -> the `graph` dialect.

`import_onnx(model)` takes a path, serialized bytes or an `onnx.ModelProto`;
`import_onnx_text(text)` takes ONNX's textual syntax (`onnx.parser`). Both return a
`builtin.module` holding `func.func @main`, whose arguments are the non-initializer graph
inputs and whose results are the graph outputs (their ONNX names are kept in the
`onnxc.input_names` / `onnxc.output_names` attributes).

Older opsets are imported by per-opset rules inside each op's converter (`ctx.opset`
decides, e.g. Softmax before 13, Slice attributes before 10), not by running onnx's
version converter first: the converter lacks adapters for many op/version pairs, fails
or silently rewrites whole models (and copies all weights), and would still leave every
normalisation the graph dialect needs (explicit pads, constant inputs as properties) to
do. Per-opset rules cost a few lines each and keep every opset importable.

`import_onnx(model, constant_inputs={"shape": array})` binds graph inputs to data known at
compile time (they become constants), for models that pass shapes or axes as inputs.

Shapes are known at import: ONNX shape inference runs first and every result type is
computed with `graph_shapes` and checked against it. A graph input's `dim_param` is a size
symbol (dialects/symbolic_dims.py; one shared by inputs no path reads together is a symbol
per group, input_symbols.py): its dimensions are SymDims, typed
`tensor<1x?x768xf32, #graph.dims<["seq"]>>`, and every rule computes with them; what cannot
be decided for every value of the symbols is an UnsupportedOpError naming the node. Inputs
that the graph dialect wants as properties (Reshape's shape, Slice bounds, axes, pads, Clip
bounds, ...) must be constants; tiny shape computations on constants (Shape, Gather, Concat,
int64 arithmetic, ...) are evaluated at import with numpy so that exported models qualify,
symbolic sizes included (onnx_shape_data: shape data holding SymDims, which never becomes a
run-time tensor).

Layout: `onnx_model` (load, inline, shape inference, topological sort), `onnx_context`
(what a converter sees), `onnx_ops_math` / `onnx_ops_activation` / `onnx_ops_nn` /
`onnx_ops_tensor` (converter tables per op family), `onnx_fold` (import-time evaluation
of tiny shape computations), `onnx_shape_data` (shape data with symbolic sizes),
`onnx_importer` (the driver).
"""

from onnxc.frontend.onnx_importer import import_onnx, import_onnx_text

__all__ = ["import_onnx", "import_onnx_text"]
