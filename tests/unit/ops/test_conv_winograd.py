"""Winograd F(4x4, 3x3) and F(2x2, 3x3) convolutions (lowering/graph_to_loops/conv_winograd.py),
compiled natively.

Each case is an ONNX Conv (bias, an activation or a residual Add when asked) compiled the
normal way (-O3: the layout pass puts the conv in NHWC, activation and Add fuse into it).
That the Winograd kernel ran is asserted (a spy on `conv_winograd.kernel`), so a change of
its limits cannot leave a case untested. Outputs are compared with a float64 reference
conv: max |y - exact| <= ERROR_BOUND * max |exact| (the bound the module states; the direct
conv's error on the same cases is 6-7x smaller; it is checked to be under a third of the
bound, so the bound is not slack around a broken kernel).
The cases hit the tile grid's edges: maps not a multiple of 4, asymmetric and no pads, a
batch of 2, a tile count that is not a whole number of row blocks (AVX2's 6 rows), and
more channels than one k-block.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from onnx import numpy_helper

import onnxc
from onnxc.lowering.graph_to_loops import conv_winograd
from onnxc.lowering.graph_to_loops.conv_nhwc import weight_value
from onnxc.lowering.graph_to_loops.conv_winograd import ERROR_BOUND
from onnxc.lowering.graph_to_loops.gemm_tiles import KC, GemmShape, pack, tiling_for
from onnxc.target import host_target
from tests.models.cache_passes import compile_warm, output_digest
from tests.unit.test_conv_nhwc import conv_model

RNG = np.random.default_rng(5)
VW = tiling_for(host_target()).vw


@pytest.fixture
def winograd_calls(monkeypatch):
    """How many conv kernels the Winograd kernel built in this test."""
    calls = []
    kernel = conv_winograd.kernel

    def spy(op, kb, ins, outs):
        calls.append(op)
        kernel(op, kb, ins, outs)

    monkeypatch.setattr(conv_winograd, "kernel", spy)
    return calls


def exact(model, feeds) -> np.ndarray:
    """The model's output in float64: conv, bias, residual, activation."""
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    attrs = {a.name: list(a.ints) for a in conv.attribute}
    pt, pl, pb, pr = attrs.get("pads", [0, 0, 0, 0])
    x = np.pad(feeds["x"].astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    y = np.einsum("ncijkl,mckl->nmij", sliding_window_view(x, (3, 3), axis=(2, 3)), weights["w"])
    if "b" in weights:
        y += weights["b"][None, :, None, None]
    if "z" in feeds:
        y += feeds["z"]
    ops = [n.op_type for n in model.graph.node]
    if "Relu" in ops:
        y = np.maximum(y, 0)
    if "LeakyRelu" in ops:
        y = np.where(y < 0, 0.01 * y, y)
    return y


def case(x_shape, cout, *, residual=False, **kwargs):
    w_shape = (cout, x_shape[1], 3, 3)
    model = conv_model(x_shape, w_shape, **kwargs)
    feeds = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
    if residual:
        z_shape = exact(model, feeds).shape
        model = conv_model(x_shape, w_shape, z_shape=z_shape, **kwargs)
        feeds["z"] = RNG.standard_normal(z_shape).astype(np.float32)
    return model, feeds


def relative_error(actual, expected) -> float:
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


CASES = {
    "resnet_like": ((1, 32, 16, 16), 32, {"pads": [1, 1, 1, 1], "act": "Relu"}),
    "odd_map_batch2": ((2, 16, 13, 11), 16, {"pads": [1, 1, 1, 1]}),
    "no_pads": ((1, 16, 18, 18), 48, {"bias": False}),
    "asymmetric_pads": ((1, 16, 17, 15), 16, {"pads": [0, 1, 2, 1], "act": "LeakyRelu"}),
    "residual": ((1, 16, 16, 20), 32, {"pads": [1, 1, 1, 1], "act": "Relu", "residual": True}),
    "two_k_blocks": ((1, 272, 16, 16), 32, {"pads": [1, 1, 1, 1]}),
    # one vector past a k-block of channels and past a panel of output channels (264 and
    # 24 with AVX2's 8 floats, 272 and 48 with AVX-512's 16): Winograd needs whole vectors
    "two_k_blocks_tail_panel": ((1, KC + VW, 12, 12), tiling_for(host_target()).nr + VW,
                                {"pads": [1, 1, 1, 1]}),
    # F(2x2, 3x3): maps with fewer than 16 4x4 tiles
    "f2_7x7_residual": ((1, 64, 7, 7), 64, {"pads": [1, 1, 1, 1], "act": "Relu",
                                            "residual": True}),
    "f2_odd_map_batch2": ((2, 16, 9, 11), 32, {"pads": [1, 1, 1, 1]}),
}


@pytest.mark.parametrize("name", CASES)
def test_within_the_stated_bound(name, winograd_calls, monkeypatch):
    x_shape, cout, kwargs = CASES[name]
    model, feeds = case(x_shape, cout, **kwargs)
    expected = exact(model, feeds)
    actual = onnxc.compile(model, cache_dir=False).run(None, feeds)[0]
    assert len(winograd_calls) == 1
    error = relative_error(actual, expected)
    assert error <= ERROR_BOUND, error
    monkeypatch.setattr(conv_winograd, "applies", lambda op, target: False)
    direct = onnxc.compile(model, cache_dir=False).run(None, feeds)[0]
    assert len(winograd_calls) == 1
    assert relative_error(direct, expected) * 3 < ERROR_BOUND


@pytest.mark.parametrize("size,form", [(16, conv_winograd.F4), (12, conv_winograd.F2)])
def test_filter_transform_is_the_whole_product_packed(size, form, monkeypatch):
    """The transform, taken a k-block and TRANSFORM_COLUMNS columns at a time (here 1000:
    not a divisor of a block), packs the same bits as the whole [points, 9] x [9, C * Cout]
    float64 product rounded once and packed as one matrix per point: with k-blocks of 256,
    320 channels are two (256 + 64), and 24 outputs a full and a half panel. A 16x16 map
    is F(4x4)'s, a 12x12 one F(2x2)'s."""
    monkeypatch.setattr(conv_winograd, "TRANSFORM_COLUMNS", 1000)
    seen = []
    transform = conv_winograd.transformed_weights

    def spy(op, target):
        seen.append((op, target, transform(op, target)))
        return seen[-1][2]

    monkeypatch.setattr(conv_winograd, "transformed_weights", spy)
    model, feeds = case((1, 320, size, size), tiling_for(host_target()).nr + VW,
                        pads=[1, 1, 1, 1])
    onnxc.compile(model, cache_dir=False, gemm_blocking="256x512").run(None, feeds)
    (op, target, attr), = seen
    assert conv_winograd.grid_of(op, target).form is form
    w = weight_value(op)
    cout, c = w.shape[:2]
    t = tiling_for(target)
    point = GemmShape(9, cout, c, False, False, 1.0, 0.0, None)
    taps = w.transpose(2, 3, 1, 0).reshape(9, c * cout).astype(np.float64)
    u = (np.kron(form.g, form.g) @ taps).astype(np.float32)
    expected = np.concatenate([pack(u[xi].reshape(c, cout), point, t)
                               for xi in range(form.points)])
    actual = np.frombuffer(attr.data.data, np.float32)
    assert c > t.kc and cout % t.nr != 0
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.skipif(not host_target().has_feature("avx2"), reason="compiles for AVX2")
def test_avx2_rows(winograd_calls):
    """x86-64-v3: 8 lanes, 6-row micro-kernel; 12 x 2 = 24 tiles are 4 row blocks exactly,
    25 tiles (20x20 map) round up to 30 rows whose extra 5 are zeros."""
    for x_shape in ((1, 16, 48, 8), (1, 16, 20, 20)):
        model, feeds = case(x_shape, 16, pads=[1, 1, 1, 1], act="Relu")
        actual = onnxc.compile(model, cache_dir=False, target="x86-64-v3").run(None, feeds)[0]
        assert relative_error(actual, exact(model, feeds)) <= ERROR_BOUND
    assert len(winograd_calls) == 2


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ((1, 16, 4, 4), (16, 16, 3, 3), {"pads": [1, 1, 1, 1]}),  # 1 tile: too few
    ((1, 16, 16, 16), (16, 16, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 16, 20, 20), (16, 16, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ((1, 32, 16, 16), (32, 16, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    ((1, 12, 16, 16), (16, 12, 3, 3), {"pads": [1, 1, 1, 1]}),  # channels not whole vectors
    ((1, 16, 16, 16), (16, 16, 5, 5), {"pads": [2, 2, 2, 2]}),
])
def test_other_convs_stay_direct(x_shape, w_shape, attrs, winograd_calls):
    model = conv_model(x_shape, w_shape, **attrs)
    feeds = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
    onnxc.compile(model, cache_dir=False).run(None, feeds)
    assert winograd_calls == []


@pytest.mark.parametrize("size,form", [(14, "F4"), (13, "F4"), (12, "F2"), (7, "F2"),
                                       (8, "F2"), (6, None), ("H", "F4")])
def test_the_form_follows_the_tile_count(size, form):
    """F(4x4) where a map has MIN_TILES 4x4 tiles, else F(2x2) where it has that many 2x2
    tiles, else the direct conv; F(4x4) over a symbolic map."""
    from onnxc.dialects import graph

    model, _ = case((1, 16, 6 if size == "H" else size, 6 if size == "H" else size), 16,
                    pads=[1, 1, 1, 1])
    if size == "H":
        for axis in (2, 3):
            model.graph.input[0].type.tensor_type.shape.dim[axis].dim_param = "HW"[axis - 2]
    module = onnxc.optimize(model, opt_level=3)
    (op,) = [o for o in module.walk() if isinstance(o, (graph.ConvOp, graph.ConvAddOp))]
    grid = conv_winograd.grid_of(op, host_target())
    assert (grid and grid.form) is (getattr(conv_winograd, form) if form else None)


@pytest.mark.parametrize("size", [24, 9])
def test_threads_and_cache_give_the_same_bits(size, tmp_path, winograd_calls):
    """Threads split the products (36 in F(4x4) on 24x24, 16 in F(2x2) on 9x9) and the
    tiles, never one sum: 1 and 2 threads agree bit for bit, and so do a cold compile and a
    cache hit."""
    model, feeds = case((1, 32, size, size), 32, pads=[1, 1, 1, 1], act="Relu")
    one = onnxc.compile(model, cache_dir=False, num_threads=1).run(None, feeds)
    two = onnxc.compile(model, cache_dir=False, num_threads=2).run(None, feeds)
    assert output_digest(one) == output_digest(two)
    warm = compile_warm(model, cache_dir=str(tmp_path), num_threads=2).run(None, feeds)
    assert output_digest(warm) == output_digest(one)
    assert len(winograd_calls) >= 3


@pytest.mark.parametrize("size", [20, 9])
def test_symbolic_batch(size, winograd_calls):
    """A batch axis exported as dynamic: tiles, V, M and the bordered copy are run-time
    sizes and the products' last row block a run-time remainder (25 tiles an image: at
    every batch a different remainder of the micro-kernel's rows; F(4x4) on 20x20 maps,
    F(2x2) on 9x9)."""
    model, _ = case((1, 16, size, size), 32, pads=[1, 1, 1, 1], act="Relu", residual=True)
    for value in (*model.graph.input, *model.graph.output):
        if value.type.tensor_type.HasField("shape"):
            value.type.tensor_type.shape.dim[0].dim_param = "N"
    compiled = onnxc.compile(model, cache_dir=False)
    assert len(winograd_calls) == 1
    for n in (1, 2, 3, 5):
        feeds = {"x": RNG.standard_normal((n, 16, size, size)).astype(np.float32),
                 "z": RNG.standard_normal((n, 32, size, size)).astype(np.float32)}
        actual = compiled.run(None, feeds)[0]
        assert actual.shape == (n, 32, size, size)
        assert relative_error(actual, exact(model, feeds)) <= ERROR_BOUND


def test_symbolic_image_sizes(tmp_path, winograd_calls):
    """Batch, height and width exported as dynamic: F(4x4) over a run-time tile grid, the
    bordered copy grown by 3 rows and columns, and the last tile of a row or column storing
    1 to 4 outputs by the run-time count (the sizes below end rows and columns on each
    count, and include maps smaller than one tile). Within the bound at every size, at one
    and two threads, and from the cache with the cold compile's bits."""
    model, _ = case((1, 16, 20, 20), 32, pads=[1, 1, 1, 1], act="Relu", residual=True)
    for value in (*model.graph.input, *model.graph.output):
        if value.type.tensor_type.HasField("shape"):
            for axis, name in ((0, "N"), (2, "H"), (3, "W")):
                value.type.tensor_type.shape.dim[axis].dim_param = name
    one = onnxc.compile(model, cache_dir=False, num_threads=1)
    two = onnxc.compile(model, cache_dir=str(tmp_path), num_threads=2)
    warm = compile_warm(model, filled=True, cache_dir=str(tmp_path), num_threads=2)
    assert len(winograd_calls) == 2  # the cache hit builds no kernel
    for n, h, w in ((1, 20, 20), (2, 13, 11), (1, 7, 6), (3, 17, 22), (1, 1, 1), (1, 2, 3)):
        feeds = {"x": RNG.standard_normal((n, 16, h, w)).astype(np.float32),
                 "z": RNG.standard_normal((n, 32, h, w)).astype(np.float32)}
        actual = one.run(None, feeds)[0]
        assert actual.shape == (n, 32, h, w)
        assert relative_error(actual, exact(model, feeds)) <= ERROR_BOUND
        assert output_digest(two.run(None, feeds)) == output_digest([actual])
        assert output_digest(warm.run(None, feeds)) == output_digest([actual])
