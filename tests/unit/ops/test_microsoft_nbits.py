"""com.microsoft MatMulNBits (frontend/onnx_ops_microsoft_nbits.py, the kernel of
lowering/graph_to_loops/weight_quant_gemm.py) against onnxruntime 1.32's CPU kernel.

One-node models (tests/single_op.py, com.microsoft opset 1) whose B, scales and zero points
are written here from random quantized values (packed by `pack`, written from the spec, not
by onnxc's own packing). Scales have both signs (the symmetric quantizer writes negative
ones).

Tolerance: onnxc and onnxruntime's accuracy levels 0-3 both dequantize exactly and sum the
K products in f32, in another order (onnxc folds the zero point once per block: scale *
(sum a q - zp * sum a)); the cases below differ by at most 5e-7 of the output's largest
magnitude (measured when written); allowed: 1e-5 of it (`close`). Level 4 is different:
onnxruntime quantizes A to int8 per block (about 0.5% of the largest magnitude here); so does
onnxc for 4-bit weights on AVX512-VNNI (the same quantization: within 1e-5 of onnxruntime),
elsewhere it computes in f32 (checked against the exact formula).

onnxruntime 1.32 applies no uint8 zero point when g_idx is given (its unpacked path reads
8 instead: checked below), and refuses 8-bit B with g_idx or with float zero points; those
cases are checked against the formula of the op's documentation, `reference`.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from onnxc.target import host_target
from tests.models.cache_passes import compile_warm, output_digest
from tests.single_op import reference_run, single_op_model

MS = {"": 17, "com.microsoft": 1}


def pack(q: np.ndarray, bits: int) -> np.ndarray:
    """Rows of unsigned `bits`-bit values -> bytes, the first value in the low bits."""
    n, k = q.shape
    per = 8 // bits
    out = np.zeros((n, -(-k // per)), np.uint8)
    for i in range(k):
        out[:, i // per] |= (q[:, i].astype(np.uint8) << ((i % per) * bits)).astype(np.uint8)
    return out


class Case:
    """A MatMulNBits node with random quantized weights, and its exact f32 meaning."""

    def __init__(self, bits=4, k=64, n=40, block=16, zp="uint8", g_idx=False, bias=False,
                 dtype=np.float32, level=0, rows=(3,), seed=0):
        rng = np.random.default_rng(seed)
        self.k, self.n, self.bits, self.block, self.dtype = k, n, bits, block, dtype
        k_blocks = -(-k // block)
        self.q = rng.integers(0, 2 ** bits, (n, k_blocks * block))
        self.scales = (rng.standard_normal((n, k_blocks)) * 0.1).astype(dtype)
        self.zero = rng.integers(0, 2 ** bits, (n, k_blocks)).astype(np.float64)
        if zp == "float":
            self.zero += rng.uniform(-0.5, 0.5, self.zero.shape)  # float zero points: any value
        self.groups = (rng.integers(0, k_blocks, k).astype(np.int32) if g_idx
                       else np.arange(k) // block)
        self.bias = (rng.standard_normal(n)).astype(dtype) if bias else None
        init = {"B": pack(self.q, bits).reshape(n, k_blocks, block * bits // 8),
                "scales": self.scales}
        names = ["a", "B", "scales"]
        if zp == "uint8":
            init["zero_points"] = pack(self.zero.astype(np.int64), bits)
        elif zp == "float":
            init["zero_points"] = self.zero.astype(dtype)
        else:
            self.zero = np.full((n, k_blocks), 2.0 ** (bits - 1))
        names.append("zero_points" if zp else "")
        if g_idx:
            init["g_idx"] = self.groups
        names.append("g_idx" if g_idx else "")
        if bias:
            init["bias"] = self.bias
            names.append("bias")
        while names[-1] == "":
            names.pop()
        self.rows = rows
        self.model = single_op_model(
            "MatMulNBits", {"a": (dtype, [*rows, k])}, {"y": (dtype, [*rows, n])},
            attrs={"K": k, "N": n, "bits": bits, "block_size": block, "accuracy_level": level},
            initializers=init, node_inputs=names, domain="com.microsoft", opset=MS,
            ir_version=8, node_name="nbits")

    def feeds(self, seed=1, rows=None):
        rng = np.random.default_rng(seed)
        shape = [*(self.rows if rows is None else rows), self.k]
        return {"a": rng.standard_normal(shape).astype(self.dtype)}

    def reference(self, a: np.ndarray) -> np.ndarray:
        """The documentation's formula in f64: A @ ((q - zp) * scale)^T + bias."""
        g = self.groups
        w = (self.q[:, :self.k] - self.zero[:, g]) * self.scales.astype(np.float64)[:, g]
        y = a.astype(np.float64) @ w.T
        return y + self.bias if self.bias is not None else y


def close(got, expected, rel=1e-5):
    """Within `rel` of the largest magnitude (the module docstring)."""
    expected = np.asarray(expected, np.float64)
    np.testing.assert_allclose(got, expected, rtol=0,
                               atol=rel * np.abs(expected).max(initial=1e-30))


def against_onnxruntime(case: Case, rows=None, **options):
    feeds = case.feeds(rows=rows)
    (expected,) = reference_run(case.model, feeds)
    (got,) = onnxc.compile(case.model, **options).run(None, feeds)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    close(got, expected)
    close(got, case.reference(feeds["a"]), 1e-5 if case.dtype == np.float32 else 2e-3)
    return got


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("zp", ["uint8", "float", None])
def test_bits_and_zero_points(bits, zp):
    case = Case(bits=bits, zp=zp)
    if bits == 8 and zp == "float":  # onnxruntime 1.32 refuses this form
        feeds = case.feeds()
        close(onnxc.compile(case.model).run(None, feeds)[0], case.reference(feeds["a"]))
        return
    against_onnxruntime(case)


@pytest.mark.parametrize("block", [16, 32, 128])
@pytest.mark.parametrize("k", [256, 100])  # 100: the last block partial
def test_block_sizes(block, k):
    against_onnxruntime(Case(block=block, k=k, n=70))


@pytest.mark.parametrize("bits", [4, 8])
def test_k_rows_not_a_multiple_of_a_byte(bits):
    """K odd: the last byte of each block row is half padding (4-bit)."""
    against_onnxruntime(Case(bits=bits, k=37, block=16))


def test_bias_and_batch_axes():
    against_onnxruntime(Case(bias=True, rows=(2, 3)))


@pytest.mark.parametrize("zp", ["float", None])
def test_act_order_group_index(zp):
    against_onnxruntime(Case(g_idx=True, zp=zp, k=96, block=32))


def test_act_order_with_uint8_zero_points_follows_the_documentation():
    """onnxruntime 1.32 reads zero point 8 whenever g_idx is given (checked here, so the
    test notices when that changes); onnxc applies the model's zero points."""
    case = Case(g_idx=True, zp="uint8", k=96, block=32, bits=4)
    feeds = case.feeds()
    (got,) = onnxc.compile(case.model).run(None, feeds)
    close(got, case.reference(feeds["a"]))
    (ort,) = reference_run(case.model, feeds)
    ignored = Case(g_idx=True, zp=None, k=96, block=32, bits=4)
    close(ort, ignored.reference(feeds["a"]))


def test_eight_bit_act_order_against_the_formula():
    """8-bit B with g_idx, which onnxruntime 1.32 refuses (its unpacked path is 2/4-bit)."""
    case = Case(g_idx=True, bits=8, k=64, block=16)
    feeds = case.feeds()
    (got,) = onnxc.compile(case.model).run(None, feeds)
    close(got, case.reference(feeds["a"]))


def test_float16():
    """f16 A, scales, zero points and bias: computed in f32 between casts; the f16 result
    rounds once (2e-3 of the largest magnitude: a few f16 ulps)."""
    case = Case(dtype=np.float16, zp="float", bias=True)
    feeds = case.feeds()
    (expected,) = reference_run(case.model, feeds)
    (got,) = onnxc.compile(case.model).run(None, feeds)
    assert got.dtype == np.float16
    close(got.astype(np.float32), expected.astype(np.float32), 2e-3)


def test_symbolic_rows_one_compile():
    """Decode's one row and prefill's many on one compile (M symbolic)."""
    case = Case(rows=("batch", "seq"), k=128, n=96, block=32, bias=True)
    compiled = onnxc.compile(case.model)
    for rows in ((1, 1), (1, 7), (2, 5), (1, 130)):
        feeds = case.feeds(rows=rows)
        (got,) = compiled.run(None, feeds)
        (expected,) = reference_run(case.model, feeds)
        assert got.shape == (*rows, case.n)
        close(got, expected)


VNNI = host_target().has_feature("avx512vnni")


@pytest.mark.skipif(not VNNI, reason="the int8 form of level 4 needs AVX512-VNNI")
@pytest.mark.parametrize("k, block, rows", [(256, 32, (3,)), (100, 32, ("b", "s")),
                                             (64, 16, (1,))])
def test_accuracy_level_4_quantizes_a_as_onnxruntime(k, block, rows):
    """4-bit level 4 on VNNI: A quantized per block to int8 as onnxruntime does, products
    exact in i32: within 1e-5 of onnxruntime's (measured: 3e-7), and about 0.5% from the
    exact f32 result, as onnxruntime is (2e-2 allowed)."""
    case = Case(level=4, k=k, n=70, block=block, bias=True, rows=rows)
    compiled = onnxc.compile(case.model)
    for shape in ((1, 1), (2, 5)) if len(rows) == 2 else (None,):
        feeds = case.feeds(rows=shape)
        (got,) = compiled.run(None, feeds)
        (ort,) = reference_run(case.model, feeds)
        close(got, ort)
        close(got, case.reference(feeds["a"]), 2e-2)
        assert not np.allclose(got, case.reference(feeds["a"]), rtol=0, atol=1e-5)


@pytest.mark.parametrize("bits, target", [(8, None), (4, "x86-64-v3")])
def test_accuracy_level_4_elsewhere_is_computed_in_f32(bits, target):
    """Level 4 where the int8 form does not apply (8-bit weights, no VNNI): the exact f32
    result, more accurate than onnxruntime's int8 activations (3e-2 from them)."""
    options = {} if target is None else {"target": target, "cache_dir": False}
    if target is not None and not host_target().has_feature("avx2"):
        pytest.skip("x86-64-v3 code runs only on an AVX2 x86-64 host")
    case = Case(level=4, k=256, n=64, block=32, bits=bits)
    feeds = case.feeds()
    (got,) = onnxc.compile(case.model, **options).run(None, feeds)
    close(got, case.reference(feeds["a"]))
    if bits == 4:  # onnxruntime takes 8-bit level 4 in f32 too
        (ort,) = reference_run(case.model, feeds)
        close(got, ort, 3e-2)


def test_warm_compile_is_bit_identical():
    case = Case(bias=True, k=100, block=32)
    feeds = case.feeds()
    cold = onnxc.compile(case.model).run(None, feeds)
    warm = compile_warm(case.model, filled=True).run(None, feeds)
    assert output_digest(cold) == output_digest(warm)


def test_export_writes_matmul_nbits_back():
    """onnxc optimize -> com.microsoft MatMulNBits that onnxruntime runs to the same result."""
    import onnxruntime as ort

    case = Case(zp="uint8", bias=True, k=100, block=32)
    exported = onnxc.optimize(case.model, as_onnx=True)
    assert [(n.domain, n.op_type) for n in exported.graph.node] == [
        ("com.microsoft", "MatMulNBits")]
    feeds = case.feeds()
    session = ort.InferenceSession(exported.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, feeds)[0],
                                  reference_run(case.model, feeds)[0])


def _with(case: Case, **changes):
    model = case.model
    node = model.graph.node[0]
    for attr in node.attribute:
        if attr.name in changes:
            attr.i = changes.pop(attr.name)
    for init in model.graph.initializer:
        if init.name in changes:
            from onnx import numpy_helper
            init.CopyFrom(numpy_helper.from_array(changes.pop(init.name), init.name))
    assert not changes
    return model


@pytest.mark.parametrize("change, match", [
    ({"bits": 3}, "bits must be 2, 4 or 8"),
    ({"block_size": 24}, "block_size must be a power of 2"),
    ({"accuracy_level": 7}, "accuracy_level"),
    ({"B": np.zeros((40, 4, 4), np.uint8)}, r"B must be uint8 \[N, k_blocks, blob_size\]"),
    ({"scales": np.ones((40, 3), np.float32)}, "scales must be"),
    ({"zero_points": np.zeros((40, 3), np.uint8)}, "uint8 zero_points of shape"),
])
def test_malformed_inputs_are_named(change, match):
    model = _with(Case(), **change)
    with pytest.raises(ModelLoadError, match=match) as err:
        onnxc.compile(model)
    assert "nbits" in str(err.value) and "com.microsoft.MatMulNBits" in str(err.value)


def test_a_run_time_weight_is_refused():
    case = Case()
    model = case.model
    b = next(i for i in model.graph.initializer if i.name == "B")
    model.graph.initializer.remove(b)
    from onnx import helper
    model.graph.input.append(helper.make_tensor_value_info("B", b.data_type, list(b.dims)))
    with pytest.raises(UnsupportedOpError, match="must be a constant"):
        onnxc.compile(model)


@pytest.mark.parametrize("target", ["x86-64-v3", "x86-64-v2"])
def test_narrower_vector_targets(target):
    """AVX2 (8 lanes, 16 registers: 2-vector panels) and SSE (4 lanes) builds of the kernel,
    run here (this x86-64 host runs both)."""
    host = host_target()
    if host.arch != "x86_64" or not host.has_feature("avx2"):
        pytest.skip("x86-64-v3 code runs only on an AVX2 x86-64 host")
    against_onnxruntime(Case(k=100, block=32, n=70, bias=True), target=target, cache_dir=False)


@pytest.mark.parametrize("k, n, block", [(20, 8, 32), (16, 1, 16), (48, 17, 16), (64, 129, 64)])
def test_small_and_odd_sizes(k, n, block):
    """K shorter than a block, N below one vector (stored lane by lane), N one past a panel."""
    against_onnxruntime(Case(k=k, n=n, block=block, bias=True))


def test_one_dimensional_a():
    """A of shape [K]: y of shape [N], as numpy's matmul."""
    against_onnxruntime(Case(rows=(), k=64, n=40))
