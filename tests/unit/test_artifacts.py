"""Ahead-of-time artifacts (runtime/artifact.py, runtime/artifact_load.py): what is written,
that the `run` program, a C program linking the library and `onnxc.load` in a fresh process
all reproduce the JIT's outputs, typed errors, and code for other CPUs run under qemu-user.

The JIT compile of the same model is the reference (its own numerics are checked against
onnxruntime everywhere else): float results within 1e-5 relative (another CPU may contract
products into FMAs differently), integer results bit for bit. Cross-target cases skip when
qemu-user or the target's C compiler is missing (CI installs them: .ci/run).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.errors import InvalidArgumentError, ModelLoadError, ToolchainError
from onnxc.runtime import artifact
from onnxc.target import host_target
from tests.artifact_runner import run_artifact, skip_unless_runnable
from tests.single_op import graph_model

RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, inits=(), opset=17):
    """`inputs` (name, type, shape) triples, `outputs` (name, type) pairs, `inits`
    (name, array) pairs; IR version 8."""
    return graph_model(nodes, {n: (t, s) for n, t, s in inputs},
                       {n: (t, None) for n, t in outputs}, initializers=dict(inits),
                       opset=opset, ir_version=8)


def conv_model(channels: int = 8):
    """A float conv + relu + matmul: parallel loops, packed weights, NHWC layout."""
    w = RNG.standard_normal((16, channels, 3, 3)).astype(np.float32)
    m = RNG.standard_normal((12, 10)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MatMul", ["r", "m"], ["y"])]
    model = _model(nodes, [("x", TensorProto.FLOAT, (1, channels, 12, 12))],
                   [("y", TensorProto.FLOAT)], [("w", w), ("m", m)])
    return model, [RNG.standard_normal((1, channels, 12, 12)).astype(np.float32)]


def int8_model():
    """Three QLinearConvs (a 7x7 / 2 stem over 3 channels, its kernel rows packed as byte
    runs; 3x3 with padding; 1x1): the packed int8 kernels."""
    c, co = 20, 40
    inits = [("xs", np.array(0.02, np.float32)), ("xz", np.array(120, np.uint8)),
             ("w0", RNG.integers(-127, 128, (c, 3, 7, 7)).astype(np.int8)),
             ("ws0", np.array(0.003, np.float32)), ("wz0", np.array(0, np.int8)),
             ("w", RNG.integers(-127, 128, (co, c, 3, 3)).astype(np.int8)),
             ("ws", RNG.uniform(0.001, 0.01, co).astype(np.float32)),
             ("wz", np.zeros(co, np.int8)), ("ys", np.array(0.05, np.float32)),
             ("yz", np.array(100, np.uint8)),
             ("b", RNG.integers(-2000, 2000, co).astype(np.int32)),
             ("w2", RNG.integers(-127, 128, (24, co, 1, 1)).astype(np.int8)),
             ("ws2", np.array(0.004, np.float32)), ("wz2", np.array(0, np.int8))]
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w0", "ws0", "wz0", "xs", "xz"],
                              ["y0"], pads=[3, 3, 3, 3], strides=[2, 2]),
             helper.make_node("QLinearConv", ["y0", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                              ["y1"], pads=[1, 1, 1, 1]),
             helper.make_node("QLinearConv", ["y1", "ys", "yz", "w2", "ws2", "wz2", "xs", "xz"],
                              ["y"])]
    model = _model(nodes, [("x", TensorProto.UINT8, (1, 3, 17, 21))], [("y", TensorProto.UINT8)],
                   inits, opset=13)
    return model, [RNG.integers(0, 256, (1, 3, 17, 21)).astype(np.uint8)]


def gather_model():
    """Run-time indices: the artifact must check them too."""
    table = RNG.standard_normal((10, 4)).astype(np.float32)
    model = _model([helper.make_node("Gather", ["t", "i"], ["y"], name="lookup")],
                   [("i", TensorProto.INT64, (3,))], [("y", TensorProto.FLOAT)],
                   [("t", table)])
    return model, [np.array([1, 9, 0], np.int64)]


def _jit(model, inputs):
    compiled = onnxc.compile(model, cache_dir=False)
    return compiled(*inputs)


def _same(got, expected):
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        if np.issubdtype(e.dtype, np.floating):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, e)


# --------------------------------------------------------------------------- host artifacts


def test_host_artifact_files_run_program_and_load(tmp_path):
    model, inputs = conv_model()
    built = onnxc.compile_artifact(model, tmp_path / "a", num_threads=2)
    assert {p.name for p in built.directory.iterdir()} == {"model.so", "model.h",
                                                           "manifest.json", "run"}
    manifest = json.loads(built.manifest.read_text())
    assert manifest["inputs"] == [["x", [1, 8, 12, 12], "float32"]]
    assert manifest["target"]["triple"] == host_target().triple
    assert manifest["num_threads"] == 2
    expected = _jit(model, inputs)
    _same(run_artifact(built.directory, inputs), expected)
    loaded = onnxc.load(built.directory)
    assert loaded.num_threads == 2 and loaded.input_names == ["x"]
    _same(loaded(*inputs), expected)
    exported = subprocess.run(["nm", "-D", "--defined-only", str(built.library)],
                              capture_output=True, text=True, check=True).stdout
    assert {line.split()[-1] for line in exported.splitlines()} == {
        "model_entry", "model_run", "model_info", "model_error", "model_weights",
        "model_output_shapes", "model_run_shaped", "model_run_tensors"}
    # the shaped API of a static model: `run` given the shapes (FILE@1x8x12x12) takes it
    (tmp_path / "x.bin").write_bytes(inputs[0].tobytes())
    shaped = subprocess.run([str(built.run), f"{tmp_path / 'x.bin'}@1x8x12x12",
                             str(tmp_path / "y.bin")], capture_output=True, text=True,
                            check=False)
    assert shaped.returncode == 0 and shaped.stdout.strip() == "y: 1x16x12x10"
    _same([np.fromfile(tmp_path / "y.bin", np.float32).reshape(1, 16, 12, 10)], expected)
    wrong = subprocess.run([str(built.run), f"{tmp_path / 'x.bin'}@1x8x16x9",
                            str(tmp_path / "y.bin")], capture_output=True, text=True,
                           check=False)
    assert wrong.returncode == 3
    assert "input 'x' dimension 2 is 16, expected 12 (the model fixes it)" in wrong.stderr


def test_load_in_a_fresh_process_compiles_nothing(tmp_path):
    model, inputs = conv_model()
    built = onnxc.compile_artifact(model, tmp_path / "a")
    np.save(tmp_path / "x.npy", inputs[0])
    script = textwrap.dedent(f"""
        import sys, time, numpy as np
        import onnxc.runtime.jit as jit
        jit.NativeModule.from_llvm_ir = None  # loading must not compile
        import onnxc
        start = time.perf_counter()
        model = onnxc.load({str(built.directory)!r})
        print(time.perf_counter() - start)
        np.save({str(tmp_path / 'y.npy')!r}, model(np.load({str(tmp_path / 'x.npy')!r}))[0])
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    _same([np.load(tmp_path / "y.npy")], _jit(model, inputs))


def test_a_c_program_links_two_artifacts(tmp_path):
    """Prefixes keep two models apart in one program; NULL takes an input's default."""
    conv, conv_inputs = conv_model()
    gather, gather_inputs = gather_model()
    onnxc.compile_artifact(conv, tmp_path / "conv", prefix="conv")
    onnxc.compile_artifact(gather, tmp_path / "gather", prefix="lookup")
    program = tmp_path / "main.c"
    program.write_text(textwrap.dedent("""
        #include <stdio.h>
        #include <string.h>
        #include "conv/conv.h"
        #include "gather/lookup.h"
        int main(void) {
            static float x[1 * 8 * 12 * 12], y[1 * 16 * 12 * 10], g[3 * 4];
            long long i3[3] = {1, 9, 0}, bad[3] = {1, 10, 0};
            FILE *f = fopen("x.bin", "rb");
            if (fread(x, sizeof x, 1, f) != 1) return 10;
            fclose(f);
            const void *in[] = {x}; void *out[] = {y};
            if (conv_run(in, out) != 0) return 11;
            const void *gin[] = {i3}; void *gout[] = {g};
            if (lookup_run(gin, gout) != 0) return 12;
            f = fopen("g.bin", "wb"); fwrite(g, sizeof g, 1, f); fclose(f);
            const void *bin[] = {bad};  /* refused: the outputs are undefined */
            int status = lookup_run(bin, gout);
            if (status != 1) return 13;
            printf("%s\\n", lookup_error(status));
            if (strstr(conv_info(), "\\"prefix\\": \\"conv\\"") == NULL) return 14;
            f = fopen("y.bin", "wb"); fwrite(y, sizeof y, 1, f); fclose(f);
            return 0;
        }
    """))
    conv_inputs[0].tofile(tmp_path / "x.bin")
    cc = artifact.c_compiler(host_target())
    subprocess.run([cc, "-O2", "-I", str(tmp_path), "-o", str(tmp_path / "main"), str(program),
                    str(tmp_path / "conv" / "conv.so"), str(tmp_path / "gather" / "lookup.so"),
                    f"-Wl,-rpath,{tmp_path / 'conv'}:{tmp_path / 'gather'}"], check=True)
    result = subprocess.run([str(tmp_path / "main")], cwd=tmp_path, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "node 'lookup' (Gather)" in result.stdout and "value 10 at position 1" in result.stdout
    expected = _jit(conv, conv_inputs)[0]
    _same([np.fromfile(tmp_path / "y.bin", np.float32).reshape(expected.shape)], [expected])
    gathered = _jit(gather, gather_inputs)[0]
    _same([np.fromfile(tmp_path / "g.bin", np.float32).reshape(gathered.shape)], [gathered])


def test_run_program_reports_bad_data_and_bad_files(tmp_path):
    model, _ = gather_model()
    built = onnxc.compile_artifact(model, tmp_path / "a")
    with pytest.raises(RuntimeError, match=r"exited with 3.*'lookup' \(Gather\).*value -11"):
        run_artifact(built.directory, [np.array([1, -11, 0], np.int64)])
    short = tmp_path / "short.bin"
    short.write_bytes(b"\0" * 7)
    result = subprocess.run([str(built.run), str(short), str(tmp_path / "y.bin")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "expected exactly 24 bytes" in result.stderr
    result = subprocess.run([str(built.run)], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "usage" in result.stderr
    loaded = onnxc.load(built.directory)
    with pytest.raises(onnxc.InvalidInputError, match="value 10 at position 1"):
        loaded(np.array([0, 10, 0], np.int64))


# --------------------------------------------------------------------------- errors


def test_load_refuses_what_cannot_run_here(tmp_path):
    model, _ = conv_model()
    built = onnxc.compile_artifact(model, tmp_path / "a")
    manifest = json.loads(built.manifest.read_text())
    # a feature LLVM knows and this CPU lacks (amx-tile, once: some hosts have it)
    missing = next(f[1:] for f in host_target().features.split(",") if f.startswith("-"))
    manifest["target"]["features"] += f",+{missing}"
    built.manifest.write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match=f"lacks {re.escape(missing)}"):
        onnxc.load(built.directory)
    manifest["target"]["triple"] = "aarch64-unknown-linux-gnu"
    built.manifest.write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match="aarch64 code"):
        onnxc.load(built.directory)
    with pytest.raises(ModelLoadError, match="no manifest.json"):
        onnxc.load(tmp_path)
    built.manifest.write_text("{not json")
    with pytest.raises(ModelLoadError, match="cannot read"):
        onnxc.load(built.directory)


def test_load_refuses_a_manifest_that_does_not_fit_its_weights(tmp_path):
    model, _ = conv_model()
    built = onnxc.compile_artifact(model, tmp_path / "a")
    manifest = json.loads(built.manifest.read_text())
    manifest["constants"][0]["offset"] = manifest["weights_bytes"]
    built.manifest.write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match="does not fit the weights"):
        onnxc.load(built.directory)


def test_toolchain_and_argument_errors(tmp_path, monkeypatch):
    model, _ = conv_model()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(ToolchainError, match="aarch64-linux-gnu-gcc is not installed.*"
                                             "apt-get install gcc-aarch64-linux-gnu"):
        onnxc.compile_artifact(model, tmp_path / "a", target="cortex-a76")
    monkeypatch.undo()
    with pytest.raises(InvalidArgumentError, match="prefix"):
        onnxc.compile_artifact(model, tmp_path / "a", prefix="not-c")
    with pytest.raises(InvalidArgumentError, match="unknown target"):
        onnxc.compile_artifact(model, tmp_path / "a", target="nonsense")


def test_onnxc_compile_command(tmp_path):
    model, inputs = conv_model()
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    from onnxc.tools.run import main

    assert main(["compile", str(path), "-o", str(tmp_path / "out"), "--num-threads", "1"]) == 0
    _same(run_artifact(tmp_path / "out", inputs), _jit(model, inputs))
    assert onnxc.load(tmp_path / "out").num_threads == 1


# --------------------------------------------------------------------------- other CPUs


def _disassembly(built) -> str:
    manifest = json.loads(built.manifest.read_text())
    tool = "objdump" if manifest["target"]["triple"].startswith("x86_64") else \
        "aarch64-linux-gnu-objdump"
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    return subprocess.run([tool, "-d", str(built.library)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("spec", ["cortex-a76", "aarch64", "x86-64-v3"])
def test_float_model_runs_on_other_cpus(spec, tmp_path):
    """16 channels: the conv is Winograd (conv_winograd.py) on the host and on every target
    (8 would be Winograd only where 8 is whole vectors, and a direct conv on one side
    differs from Winograd on the other by Winograd's rounding, not this tolerance's)."""
    skip_unless_runnable(spec)
    model, inputs = conv_model(channels=16)
    built = onnxc.compile_artifact(model, tmp_path / "a", target=spec, num_threads=2)
    _same(run_artifact(built.directory, inputs), _jit(model, inputs))
    code = _disassembly(built)
    if spec == "x86-64-v3":
        assert "zmm" not in code and "ymm" in code
    else:
        assert "fmla\tv" in code  # NEON vector FMAs


@pytest.mark.parametrize("spec, instruction", [("cortex-a76", "sdot\tv"),
                                               ("aarch64", None),
                                               ("x86-64-v3", "vpmaddwd")])
def test_int8_model_runs_on_other_cpus(spec, instruction, tmp_path):
    """sdot with +dotprod (cortex-a76), the portable i32 form without it (generic AArch64),
    AVX2's exact vpmaddwd form on x86-64-v3: all bit-identical to the host's."""
    skip_unless_runnable(spec)
    model, inputs = int8_model()
    built = onnxc.compile_artifact(model, tmp_path / "a", target=spec, num_threads=2)
    _same(run_artifact(built.directory, inputs), _jit(model, inputs))
    code = _disassembly(built)
    if instruction is not None:
        assert instruction in code
    else:
        assert "sdot" not in code and "udot" not in code


def test_stored_dtype_names_are_the_supported_onnx_types():
    """runtime/dtypes.py (which loading uses, without importing onnx) lists exactly the
    element types the frontend supports."""
    import onnx

    from onnxc.frontend import onnx_types
    from onnxc.runtime.dtypes import DTYPES

    supported = {("string" if t == onnx.TensorProto.STRING else onnx_types.numpy_dtype(t).name):
                 onnx_types.numpy_dtype(t)
                 for t in onnx.TensorProto.DataType.values() if onnx_types.is_supported(t)}
    assert DTYPES == supported


def test_loading_imports_neither_onnx_nor_the_compiler(tmp_path):
    model, _ = conv_model()
    built = onnxc.compile_artifact(model, tmp_path / "a")
    script = (f"import sys, onnxc; onnxc.load({str(built.directory)!r}); "
              "print(sorted(m for m in ('onnx', 'xdsl', 'onnxc.frontend', 'onnxc.lowering') "
              "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"
