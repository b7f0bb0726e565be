"""Importing models with symbolic dimensions (ONNX dim_param) into graph-dialect IR.

A `dim_param` is a size symbol: the importer types every value with ints and SymDims
(`tensor<1x?x64xf32, #graph.dims<["seq"]>>`), folds the shape subgraphs exporters build
(Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Range(0, seq)) into shape data holding the
symbols, and refuses what it cannot express with an UnsupportedOpError naming the node, the
opset and the symbol. The numeric tests run the imported IR through onnxc's graph evaluator
and compare with onnx's reference at several sizes: one import serves every size.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.func import FuncOp

from onnxc.dialects import graph
from onnxc.dialects.symbolic_dims import SymDim
from onnxc.errors import ModelLoadError
from onnxc.frontend import import_onnx, import_onnx_text
from onnxc.frontend.onnx_importer import OnnxImporter
from tests.single_op import graph_model

SEQ, BATCH, PAST = SymDim.symbol("seq"), SymDim.symbol("batch"), SymDim.symbol("past")
F = TensorProto.FLOAT
I64 = TensorProto.INT64
H, D = 2, 4
E = H * D


# ----------------------------------------------------------------------------- helpers


def vi(name: str, shape, elem=F) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, initializers=(), opset=18) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=opset)


def ints(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def floats(name: str, *shape, seed: int = 0) -> onnx.TensorProto:
    rng = np.random.default_rng(abs(hash(name)) % 2**32 + seed)
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def main(module) -> FuncOp:
    module.verify()
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return func


def text_main(text: str, opset: int = 18) -> FuncOp:
    return main(import_onnx_text(f'<ir_version: 10, opset_import: ["" : {opset}]>\n{text}'))


def types(func: FuncOp) -> dict[str, str]:
    """Each named result's type, as printed."""
    found = {a.name_hint: str(a.type) for a in func.body.block.args}
    for op in func.body.block.ops:
        for r in op.results:
            if r.name_hint:
                found[r.name_hint] = str(r.type)
    return found


def op_names(func: FuncOp) -> list[str]:
    return [op.name for op in func.body.block.ops]


def result_types(func: FuncOp) -> list[str]:
    return [str(t) for t in func.function_type.outputs.data]


def evaluate(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnxc.passes.evaluator import evaluate as run_graph

    module = import_onnx(m)
    module.verify()
    names = [a.name for a in m.graph.input if a.name not in {i.name for i in m.graph.initializer}]
    return run_graph(module, [feeds[n] for n in names])


def check_numerics(m: onnx.ModelProto, feeds_list, rtol=1e-4, atol=1e-5) -> None:
    reference = ReferenceEvaluator(m)
    for feeds in feeds_list:
        ours = evaluate(m, feeds)
        theirs = reference.run(None, feeds)
        for a, b in zip(ours, theirs, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- inputs


def test_dim_params_become_symbolic_types():
    f = main(import_onnx(model([helper.make_node("Relu", ["x"], ["y"])],
                               [vi("x", [1, "seq", 64])], [vi("y", [1, "seq", 64])])))
    assert types(f) == {"x": 'tensor<1x?x64xf32, #graph.dims<["seq"]>>',
                        "y": 'tensor<1x?x64xf32, #graph.dims<["seq"]>>'}
    (arg,) = f.body.block.args
    assert graph.shape_of(arg) == (1, SEQ, 64)
    assert graph.is_symbolic(arg)


def test_dim_param_names_are_sanitised_and_shared():
    """Inputs naming the same dim_param share the symbol; names become identifiers."""
    f = main(import_onnx(model(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        [vi("a", ["batch size", "seq-len"]), vi("b", ["batch size", "seq-len"])],
        [vi("y", ["batch size", "seq-len"])])))
    assert types(f)["y"] == 'tensor<?x?xf32, #graph.dims<["batch_size", "seq_len"]>>'


def test_unnamed_and_question_mark_dims_are_unknowns_of_their_own():
    """As onnxruntime reads them: an empty dim and "?" are independent sizes, named after
    the input and axis; a MatMul of two ["?", "?"] inputs guards its inner sizes' equality
    for the run instead of reading them as one name."""
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [None, 4])], [vi("y", [None, 4])])
    assert types(main(import_onnx(m)))["y"] == 'tensor<?x4xf32, #graph.dims<["x_dim0"]>>'
    f = main(import_onnx(model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                               [vi("x", ["?", "?"]), vi("w", ["?", "?"])], [vi("y", None)])))
    assert types(f)["y"] == 'tensor<?x?xf32, #graph.dims<["x_dim0", "w_dim1"]>>'
    assert "x_dim1 == w_dim0" in str(f.attributes["onnxc.size_guards"])


def test_input_size_check_uses_the_static_part(monkeypatch):
    """The resource check still runs on an input's static dimensions (symbols count as 1)."""
    from onnxc.errors import ResourceLimitError

    monkeypatch.setenv("ONNXC_MAX_ALLOC_MB", "1")
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["seq", 1024, 1024])],
              [vi("y", ["seq", 1024, 1024])])
    with pytest.raises(ResourceLimitError, match="graph input 'x'"):
        import_onnx(m)
    small = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["seq", 64])],
                  [vi("y", ["seq", 64])])
    main(import_onnx(small))


def test_subgraph_inputs_with_dim_params_still_import():
    """A Loop body may declare its carried value with a dim_param of its own: it is typed by
    what the Loop passes, as before (not a new symbol)."""
    f = text_main("""
    g (float[2,3] x) => (y) <int64 n = {2}, bool c = {1}> {
      y = Loop(n, c, x) <body = b (int64 i, bool ci, float[N,3] xi) => (bool co, float[N,3] xo) {
        co = Identity(ci)
        xo = Relu(xi)
      }>
    }""")
    assert types(f)["y"] == "tensor<2x3xf32>"


# ----------------------------------------------------------------------------- shape data


def test_shape_of_a_symbolic_tensor_is_shape_data():
    m = model([helper.make_node("Shape", ["x"], ["s"]),
               helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
               helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
               helper.make_node("Relu", ["x"], ["y"])],
              [vi("x", [1, "seq", 64])], [vi("y", [1, "seq", 64])],
              [ints("one", 1), ints("zero", 0)])
    importer = OnnxImporter(m)
    importer.run()
    s = importer.tensors["s"]
    assert s.array.dtype == object and list(s.array) == [1, SEQ, 64]
    assert str(s.type) == "tensor<3xi64>"
    assert importer.tensors["n"].array.reshape(()).item() == SEQ
    b = importer.tensors["b"].array  # static again: a plain int64 array
    assert b.dtype == np.int64 and int(b) == 1


def test_shape_arithmetic_folds_through_the_usual_ops():
    """Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, Mul/Div, decidable Equal/Max, Where:
    the Reshape target they compute stays a property, no op is emitted for them."""
    f = text_main("""
    g (float[batch,seq,8] x) => (y) <int64[1] zero = {0}, int64[1] two = {2}, int64 i = {1},
                                     int64[1] ax = {0}, int64 four = {4}, int64[1] m1 = {-1},
                                     int64[1] one = {1}> {
      s = Shape(x)
      bs = Slice(s, zero, two)
      c32 = Cast<to = 6>(bs)
      c64 = Cast<to = 7>(c32)
      n = Gather(s, i)
      nn = Mul(n, four)
      half = Div(nn, four)
      h1 = Unsqueeze(half, ax)
      hs = Squeeze(h1, ax)
      h2 = Unsqueeze(hs, ax)
      big = Max(h2, one)
      neg = Equal(big, m1)
      keep = Where(neg, one, big)
      t = Concat<axis = 0>(c64, two, two, m1)
      y = Reshape(x, t)
    }""")
    assert op_names(f) == ["graph.reshape", "func.return"]
    assert types(f)["y"] == 'tensor<?x?x2x2x2xf32, #graph.dims<["batch", "seq"]>>'


def test_reshape_minus_one_is_an_exact_division():
    f = text_main("""
    g (float[batch,seq,8] x) => (a, b, c) <int64[2] s = {-1, 8}, int64[3] t = {0, 0, -1},
                                           int64[4] u = {0, -1, 2, 4}> {
      a = Reshape(x, s)
      b = Reshape(x, t)
      c = Reshape(x, u)
    }""")
    assert types(f)["a"] == 'tensor<?x8xf32, #graph.dims<["batch*seq"]>>'
    assert types(f)["b"] == 'tensor<?x?x8xf32, #graph.dims<["batch", "seq"]>>'
    assert types(f)["c"] == 'tensor<?x?x2x4xf32, #graph.dims<["batch", "seq"]>>'


def test_range_to_a_symbolic_limit_has_that_length():
    f = text_main("""
    g (int64[1,seq] ids) => (p) <int64 zero = {0}, int64 one = {1}, int64 i = {1}> {
      s = Shape(ids)
      n = Gather(s, i)
      p = Range(zero, n, one)
    }""")
    assert "graph.range" in op_names(f)
    assert result_types(f) == ['tensor<?xi64, #graph.dims<["seq"]>>']


def test_expand_constant_of_shape_and_tile_take_symbolic_shapes():
    f = text_main("""
    g (float[batch,seq] m, float[8] bias, float[1,1,8] row) => (e, c, t) <int64[1] e8 = {8},
                                                                       int64[1] one = {1},
                                                                       int64[1] a = {1},
                                                                       int64[1] b = {2}> {
      s = Shape(m)
      full = Concat<axis = 0>(s, e8)
      e = Expand(bias, full)
      c = ConstantOfShape<value = float[1] {1.0}>(s)
      n = Slice(s, a, b)
      reps = Concat<axis = 0>(one, n, one)
      t = Tile(row, reps)
    }""")
    assert types(f)["e"] == 'tensor<?x?x8xf32, #graph.dims<["batch", "seq"]>>'
    assert types(f)["c"] == 'tensor<?x?xf32, #graph.dims<["batch", "seq"]>>'
    assert types(f)["t"] == 'tensor<1x?x8xf32, #graph.dims<["seq"]>>'


# ----------------------------------------------------------------------------- converters


def test_transformer_ops_keep_symbolic_dims():
    f = text_main("""
    g (float[batch,seq,24] x, float[8] g1, float[8] b1, float[8,4] w, float[4] c,
       bool[batch,seq,1] keep) => (ln, rms, mm, gm, ge, er, wh, ca, sm, lsm, dr, id, fl, tr,
                                   rm, rs, a, b, sp) <int64[1] ax = {-1}> {
      a, b, sp = Split<axis = 2>(x)
      ln = LayerNormalization(a, g1, b1)
      rms = RMSNormalization(b, g1)
      mm = MatMul(a, w)
      flat = Flatten<axis = 2>(a)
      gm = Gemm(flat, w, c)
      ge = Gelu(mm)
      er = Erf(mm)
      wh = Where(keep, mm, er)
      ca = Cast<to = 10>(mm)
      sm = Softmax<axis = 1>(mm)
      lsm = LogSoftmax<axis = -1>(mm)
      dr = Dropout(mm)
      id = Identity(mm)
      fl = Flatten<axis = 1>(mm)
      tr = Trilu<upper = 0>(mm)
      rm = ReduceMean<keepdims = 0>(mm, ax)
      rs = ReduceSum(mm, ax)
    }""", opset=23)
    t = types(f)
    bs = '#graph.dims<["batch", "seq"]>'
    assert t["a"] == t["sp"] == t["ln"] == t["rms"] == f"tensor<?x?x8xf32, {bs}>"
    for name in ("mm", "ge", "er", "wh", "sm", "lsm", "dr", "id", "tr"):
        assert t[name] == f"tensor<?x?x4xf32, {bs}>", name
    assert t["ca"] == f"tensor<?x?x4xf16, {bs}>"
    assert t["gm"] == 'tensor<?x4xf32, #graph.dims<["batch*seq"]>>'
    assert t["fl"] == 'tensor<?x?xf32, #graph.dims<["batch", "4*seq"]>>'
    assert t["rm"] == f"tensor<?x?xf32, {bs}>"
    assert t["rs"] == f"tensor<?x?x1xf32, {bs}>"


def test_gather_embedding_and_unsqueeze_squeeze():
    f = text_main("""
    g (int64[batch,seq] ids, float[16,8] table) => (emb, u, s) <int64[1] ax = {1}> {
      emb = Gather(table, ids)
      u = Unsqueeze(emb, ax)
      s = Squeeze(u, ax)
    }""")
    t = types(f)
    assert t["emb"] == t["s"] == 'tensor<?x?x8xf32, #graph.dims<["batch", "seq"]>>'
    assert t["u"] == 'tensor<?x1x?x8xf32, #graph.dims<["batch", "seq"]>>'


def test_slices_along_static_and_symbolic_axes():
    f = text_main("""
    g (float[1,seq,8] x) => (last, first, head, tail, tok, bounded) <int64[1] m1 = {-1},
        int64[1] end = {9223372036854775807}, int64[1] ax = {1}, int64[1] zero = {0},
        int64[1] one = {1}, int64[1] two = {2}, int64[1] four = {4}, int64 i = {-1},
        int64[1] a = {1}, int64[1] b = {2}> {
      last = Slice(x, m1, end, ax)
      first = Slice(x, zero, one, ax)
      head = Slice(x, zero, m1, ax)
      tail = Slice(x, two, four, two)
      tok = Gather<axis = 1>(x, i)
      s = Shape(x)
      n = Slice(s, a, b)
      bounded = Slice(x, zero, n, ax)
    }""")
    t = types(f)
    # seq may be 0: the slices clamp as ONNX says (guards, not assumptions)
    assert t["last"] == t["first"] == 'tensor<1x?x8xf32, #graph.dims<["min(1, seq)"]>>'
    assert t["head"] == 'tensor<1x?x8xf32, #graph.dims<["max(0, seq-1)"]>>'
    assert t["tail"] == 'tensor<1x?x2xf32, #graph.dims<["seq"]>>'
    assert t["tok"] == "tensor<1x8xf32>"
    assert t["bounded"] == 'tensor<1x?x8xf32, #graph.dims<["seq"]>>'  # x[:, :seq]


def test_kv_cache_concat_adds_the_sizes():
    f = main(import_onnx(model(
        [helper.make_node("Concat", ["past_k", "k"], ["present"], axis=2)],
        [vi("past_k", [1, H, "past", D]), vi("k", [1, H, "seq", D])],
        [vi("present", [1, H, "past_seq", D])])))
    assert result_types(f) == ['tensor<1x2x?x4xf32, #graph.dims<["past+seq"]>>']
    assert graph.shape_of(f.function_type.outputs.data[0])[2] == PAST + SEQ


def test_onnx_dim_params_are_not_compared_with_ours():
    """ONNX names the concatenated size itself (here the declared output's 'total'): only
    static dimensions are checked against ONNX's inference."""
    f = main(import_onnx(model(
        [helper.make_node("Concat", ["a", "b"], ["y"], axis=0)],
        [vi("a", ["n", 4]), vi("b", [3, 4])], [vi("y", ["total", 4])])))
    assert result_types(f) == ['tensor<?x4xf32, #graph.dims<["n+3"]>>']


# ----------------------------------------------------------------------------- GPT block


def gpt_block(ids_shape=(1, "seq")) -> onnx.ModelProto:
    """Embedding of ids + position embedding of Range(0, Shape(ids)[1]), LayerNorm, Q/K/V,
    heads by a Shape -> Gather -> Unsqueeze -> Concat -> Reshape subgraph, scaled softmax
    attention, heads merged back, a Gelu MLP; every shape computed as exporters do."""
    n = helper.make_node
    nodes = [
        n("Gather", ["wte", "ids"], ["tok"]),
        n("Shape", ["ids"], ["ids_shape"]),
        n("Gather", ["ids_shape", "one"], ["seq_len"], axis=0),
        n("Range", ["zero", "seq_len", "one"], ["pos"]),
        n("Unsqueeze", ["pos", "axes0"], ["pos_ids"]),
        n("Gather", ["wpe", "pos_ids"], ["pos_emb"]),
        n("Add", ["tok", "pos_emb"], ["h0"]),
        n("LayerNormalization", ["h0", "ln_w", "ln_b"], ["ln"], axis=-1),
        n("MatMul", ["ln", "wq"], ["q"]),
        n("MatMul", ["ln", "wk"], ["k"]),
        n("MatMul", ["ln", "wv"], ["v"]),
        n("Shape", ["q"], ["q_shape"]),
        n("Gather", ["q_shape", "zero"], ["b"], axis=0),
        n("Gather", ["q_shape", "one"], ["s"], axis=0),
        n("Unsqueeze", ["b", "axes0"], ["b1"]),
        n("Unsqueeze", ["s", "axes0"], ["s1"]),
        n("Concat", ["b1", "s1", "heads"], ["heads_shape"], axis=0),
        n("Reshape", ["q", "heads_shape"], ["q4"]),
        n("Reshape", ["k", "heads_shape"], ["k4"]),
        n("Reshape", ["v", "heads_shape"], ["v4"]),
        n("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        n("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        n("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        n("MatMul", ["qt", "kt"], ["scores"]),
        n("Div", ["scores", "scale"], ["scaled"]),
        n("Softmax", ["scaled"], ["probs"], axis=-1),
        n("MatMul", ["probs", "vt"], ["context"]),
        n("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
        n("Concat", ["b1", "s1", "width"], ["merged_shape"], axis=0),
        n("Reshape", ["context_t", "merged_shape"], ["attn"]),
        n("Add", ["h0", "attn"], ["h1"]),
        n("MatMul", ["h1", "w1"], ["m1"]),
        n("Gelu", ["m1"], ["g"]),
        n("MatMul", ["g", "w2"], ["m2"]),
        n("Add", ["h1", "m2"], ["out"]),
    ]
    inits = [floats("wte", 16, E), floats("wpe", 32, E), floats("ln_w", E), floats("ln_b", E),
             floats("wq", E, E), floats("wk", E, E), floats("wv", E, E),
             floats("w1", E, 4 * E), floats("w2", 4 * E, E),
             ints("zero", 0), ints("one", 1), ints("axes0", [0]), ints("heads", [H, D]),
             ints("width", [E]),
             numpy_helper.from_array(np.array(np.sqrt(D), np.float32), "scale")]
    out_shape = [ids_shape[0], ids_shape[1], E]
    return model(nodes, [vi("ids", list(ids_shape), I64)], [vi("out", out_shape)], inits,
                 opset=20)


def test_gpt_block_imports_with_a_symbolic_sequence():
    f = main(import_onnx(gpt_block()))
    t = types(f)
    seq = '#graph.dims<["seq"]>'
    assert t["ids"] == f"tensor<1x?xi64, {seq}>"
    assert t["pos"] == f"tensor<?xi64, {seq}>"
    assert t["h0"] == t["ln"] == t["q"] == t["attn"] == t["out"] == f"tensor<1x?x8xf32, {seq}>"
    assert t["q4"] == f"tensor<1x?x2x4xf32, {seq}>"
    assert t["kt"] == f"tensor<1x2x4x?xf32, {seq}>"
    assert t["scores"] == t["probs"] == 'tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>'
    assert t["m1"] == t["g"] == f"tensor<1x?x32xf32, {seq}>"
    assert result_types(f) == [f"tensor<1x?x8xf32, {seq}>"]
    # the shape subgraphs left nothing behind: no op computes a shape at run time
    assert not {"graph.shape", "graph.concat", "graph.cast"} & set(op_names(f))


def test_gpt_block_imports_with_symbolic_batch_and_sequence():
    f = main(import_onnx(gpt_block(("batch", "seq"))))
    t = types(f)
    bs = '#graph.dims<["batch", "seq"]>'
    assert t["q4"] == f"tensor<?x?x2x4xf32, {bs}>"
    assert t["scores"] == 'tensor<?x2x?x?xf32, #graph.dims<["batch", "seq", "seq"]>>'
    assert result_types(f) == [f"tensor<?x?x8xf32, {bs}>"]


def test_gpt_block_computes_the_reference_at_every_length():
    rng = np.random.default_rng(0)
    check_numerics(gpt_block(), [{"ids": rng.integers(0, 16, (1, n))} for n in (1, 3, 7)])
    check_numerics(gpt_block(("batch", "seq")),
                   [{"ids": rng.integers(0, 16, (b, n))} for b, n in ((1, 2), (3, 5))])


# ----------------------------------------------------------------------------- Attention-23


ATTENTION = """
g (float[1,2,seq,4] q, float[1,2,seq,4] k, float[1,2,seq,4] v{past_inputs}) => (y{outs}) {{
  y{outs} = Attention<is_causal = 1>(q, k, v{past_args})
}}"""


def attention(past: bool) -> onnx.ModelProto:
    text = ATTENTION.format(
        past_inputs=", float[1,2,past,4] pk, float[1,2,past,4] pv" if past else "",
        outs=", pk2, pv2" if past else "", past_args=", , pk, pv" if past else "")
    return onnx.parser.parse_model(f'<ir_version: 10, opset_import: ["" : 23]>\n{text}')


def test_causal_attention_without_past_is_the_kernels_causal_mask():
    f = main(import_onnx(attention(past=False)))
    (op,) = [op for op in f.body.block.ops if isinstance(op, graph.AttentionOp)]
    assert op.causal_offset.value.data == 0
    assert op.mask is None
    assert result_types(f) == ['tensor<1x2x?x4xf32, #graph.dims<["seq"]>>']


def test_causal_attention_after_a_symbolic_past():
    """The causal offset is the symbolic past length, Sk - Sq: graph.attention takes it at
    run time (causal_from_end), no mask is built."""
    f = main(import_onnx(attention(past=True)))
    assert result_types(f)[1:] == ['tensor<1x2x?x4xf32, #graph.dims<["past+seq"]>>'] * 2
    (op,) = [op for op in f.body.block.ops if isinstance(op, graph.AttentionOp)]
    assert op.causal_offset is None and op.causal_from_end is not None
    assert op.mask is None
    rng = np.random.default_rng(1)

    def feeds(past, seq):
        def r(*s):
            return rng.standard_normal(s).astype(np.float32)

        return {"q": r(1, 2, seq, 4), "k": r(1, 2, seq, 4), "v": r(1, 2, seq, 4),
                "pk": r(1, 2, past, 4), "pv": r(1, 2, past, 4)}

    check_numerics(attention(past=True), [feeds(3, 1), feeds(2, 4), feeds(0, 3)])


# ----------------------------------------------------------------------------- refusals


def test_shape_data_needed_at_run_time_is_a_symbolic_constant():
    """Returned or cast to float, shape data is computed from the sizes at run time
    (tests/unit/test_symbolic_control_import.py runs it)."""
    f = text_main("g (float[1,seq] x) => (s, y) { s = Shape(x) y = Cast<to = 1>(s) }")
    assert op_names(f) == ["graph.symbolic_constant", "graph.cast", "func.return"]
    assert types(f) == {"x": 'tensor<1x?xf32, #graph.dims<["seq"]>>', "s": "tensor<2xi64>",
                        "y": "tensor<2xf32>"}


def test_static_inconsistencies_stay_model_load_errors():
    """Static dimensions that differ are an invalid model, symbolic ones or not around."""
    with pytest.raises(ModelLoadError, match=r"matmul inner dimensions differ: \(seq, 5\)"):
        text_main("g (float[seq,5] x, float[4,3] w) => (y) { y = MatMul(x, w) }")
    with pytest.raises(ModelLoadError, match="do not broadcast"):
        text_main("g (float[seq,5] x, float[seq,3] w) => (y) { y = Add(x, w) }")


def test_a_run_time_roi_that_does_not_fit_is_a_typed_error():
    """A tf_crop_and_resize region computed in the run is an operand (it was refused); one
    of the wrong length fails as a typed error naming the node, never as a Python error."""
    f = text_main("g (float[1,3,h,w] x, float[8] r, int64[4] s) => (y) { y = Resize<"
                  "mode = \"linear\", coordinate_transformation_mode = "
                  "\"tf_crop_and_resize\">(x, r, , s) }")
    assert "graph.resize" in op_names(f)
    with pytest.raises(ModelLoadError, match=r"node 'Resize_0' \(Resize, opset 18\).*roi"):
        text_main("g (float[1,3,h,w] x, float[5] r, int64[4] s) => (y) { y = Resize<"
                  "mode = \"linear\", coordinate_transformation_mode = "
                  "\"tf_crop_and_resize\">(x, r, , s) }")


def test_unique_along_an_axis_imports_over_symbolic_sizes():
    """Unique of sub-tensors (it was refused): the slices' lexicographic order, and a
    run symbol for their count."""
    f = text_main("g (float[seq,4] x) => (y) { y = Unique<axis = 0>(x) }")
    assert "graph.lex_order" in op_names(f) and "graph.nonzero" in op_names(f)
    assert result_types(f) == ['tensor<?x4xf32, #graph.dims<["Unique_0_count"]>>']


@pytest.mark.parametrize(("axis", "opset"), [(0, 18), (-1, 18), (1, 11)])
def test_hardmax_over_symbolic_sizes_matches_onnxruntime(axis, opset):
    """Hardmax of symbolic sizes: 1 at the first maximum of each slice (ties included),
    compiled once, exact at every shape."""
    import onnxruntime as ort

    import onnxc

    g = helper.make_graph([helper.make_node("Hardmax", ["x"], ["y"], axis=axis)], "g",
                          [helper.make_tensor_value_info("x", F, ["a", 4, "b"])],
                          [helper.make_empty_tensor_value_info("y")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    for shape in [(2, 4, 3), (1, 4, 1), (3, 4, 5)]:
        x = rng.integers(0, 3, shape).astype(np.float32)  # ties: the first maximum wins
        (ours,), (theirs,) = compiled(x), session.run(None, {"x": x})
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(("k", "dtype"), [(0, None), (2, TensorProto.INT32), (-1, F)])
def test_eye_like_over_symbolic_sizes_matches_onnxruntime(k, dtype):
    """EyeLike of a [rows, cols] input of symbolic size: Range == Range, cast, compiled
    once, exact at every shape (an empty one too)."""
    import onnxruntime as ort

    import onnxc

    attrs = {"k": k} | ({"dtype": dtype} if dtype else {})
    g = helper.make_graph([helper.make_node("EyeLike", ["x"], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", F, ["r", "c"])],
                          [helper.make_tensor_value_info("y", dtype or F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for shape in [(3, 5), (4, 4), (6, 2), (0, 3)]:
        x = np.zeros(shape, np.float32)
        (ours,), (theirs,) = compiled(x), session.run(None, {"x": x})
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, shape
        np.testing.assert_array_equal(ours, theirs)