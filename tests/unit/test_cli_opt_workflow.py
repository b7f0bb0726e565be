"""`onnxc-opt`'s text-IR workflow: --emit stages, combined pipelines, targeted IR dumps, stdin,
split-input errors, node-name locations, elided constants, pass listing and --input-shapes."""

import io
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import InvalidArgumentError
from onnxc.frontend import import_onnx
from onnxc.passes.levels import graph_pipeline
from onnxc.registry import ONNXC_PASSES
from onnxc.tools.opt import main
from onnxc.tools.pass_listing import pass_summary

GOOD = """\
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.add(%0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
"""

BAD_TYPES = """\
func.func @main(%x: tensor<2xf32>, %y: tensor<2xi32>) -> tensor<2xf32> {
  %0 = graph.add(%x, %y) : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""


def conv_model(batch: int | str = 1) -> onnx.ModelProto:
    """Conv (named conv0) + Relu (relu0) on 1x3x8x8, 108 weights; `batch` may be symbolic."""
    weights = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["X", "W"], ["C"], name="conv0", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["C"], ["Y"], name="relu0")], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [batch, 4, 8, 8])], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def write(tmp_path):
    def write(content, name: str = "input.mlir") -> str:
        path = tmp_path / name
        if isinstance(content, onnx.ModelProto):
            onnx.save(content, path)
        else:
            path.write_text(content)
        return str(path)

    return write


# ---------------------------------------------------------------------------- 1. --emit


def test_emit_loops_and_llvm_dialect(write, capsys):
    path = write(conv_model(), "m.onnx")
    assert main([path, "--emit=loops", "--num-threads=1"]) == 0
    loops = capsys.readouterr().out
    assert "graph.conv(" not in loops and "memref" in loops and "scf.for" in loops
    assert main([path, "--emit=llvm-dialect", "--num-threads=1"]) == 0
    llvm = capsys.readouterr().out
    assert "llvm.func @onnxc_entry" in llvm and "scf.for" not in llvm


def test_emit_llvm_ir_and_asm(write, capsys):
    path = write(conv_model(), "m.onnx")
    assert main([path, "-O1", "--emit=llvm-ir", "--num-threads=1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("; ModuleID") and "define" in out and "onnxc_entry" in out
    assert main([path, "--emit=asm", "--num-threads=1"]) == 0
    asm = capsys.readouterr().out
    assert "model_entry:" in asm and "text" in asm


def test_emit_obj_and_lib_write_elf_files(write, tmp_path, capsys):
    path = write(conv_model(), "m.onnx")
    obj, lib = tmp_path / "m.o", tmp_path / "m.so"
    assert main([path, "--emit=obj", "-o", str(obj), "--num-threads=1"]) == 0
    assert obj.read_bytes()[:4] == b"\x7fELF"
    assert main([path, "--emit=lib", "-o", str(lib), "--num-threads=1"]) == 0
    assert lib.read_bytes()[:4] == b"\x7fELF"
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                             text=True, check=True).stdout
    assert "model_run" in symbols
    assert capsys.readouterr().out == ""


def test_binary_emit_refuses_a_terminal_and_needs_a_file(write, capsys, monkeypatch):
    path = write(conv_model(), "m.onnx")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    assert main([path, "--emit=obj"]) == 1
    assert "give -o FILE" in capsys.readouterr().err
    monkeypatch.undo()
    assert main([path, "--emit=lib"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --emit=lib writes a shared library") and err.count("\n") == 1
    assert main([path, "--emit=obj", "-o", "x.o", "--split-input-file"]) == 1
    assert "--split-input-file" in capsys.readouterr().err


def test_emit_rejects_a_target_for_non_mlir_stages(write, capsys):
    assert main([write(conv_model(), "m.onnx"), "--emit=asm", "-t", "llvm"]) == 1
    assert "-t applies only to the MLIR stages" in capsys.readouterr().err


# ---------------------------------------------------------------------------- 2. pipelines


def test_print_pipeline_includes_lowering_past_graph(capsys):
    assert main(["-O1", "-p", "cse", "--emit=llvm-ir", "--num-threads=2", "--print-pipeline"]) == 0
    text = capsys.readouterr().out.strip()
    assert text.startswith(f"builtin.module({graph_pipeline(1)},cse,widen-half-precision,")
    assert "convert-graph-to-loops,bind-constants" in text
    assert "outline-parallel-loops{num-threads=2}" in text
    assert text.endswith("emit-entry-wrapper{entry=main})")
    assert main(["-p", "cse", "--print-pipeline"]) == 0
    assert capsys.readouterr().out.strip() == "builtin.module(cse)"


# ---------------------------------------------------------------------------- 3. dumps, stdin


def test_print_ir_before_and_after_one_pass(write, capsys):
    assert main([write(GOOD), "-p", "cse,dce,canonicalize",
                 "--mlir-print-ir-after=dce", "--mlir-print-ir-before", "cse,canonicalize"]) == 0
    out, err = capsys.readouterr()
    headers = [line for line in err.splitlines() if "IR Dump" in line]
    assert headers == [
        "// -----// IR Dump Before CsePass (cse) //----- //",
        "// -----// IR Dump After DeadCodeElimination (dce) //----- //",
        "// -----// IR Dump Before CanonicalizePass (canonicalize) //----- //",
    ]
    assert "IR Dump" not in out


def test_print_ir_after_unknown_pass(write, capsys):
    assert main([write(GOOD), "-p", "cse", "--mlir-print-ir-after=csee"]) == 1
    assert "unknown pass 'csee'; did you mean 'cse'?" in capsys.readouterr().err


def test_dash_reads_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD.encode())))
    assert main(["-", "-p", "cse"]) == 0
    assert "graph.add(%0, %0)" in capsys.readouterr().out


def test_stdin_errors_are_located_in_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BAD_TYPES.encode())))
    assert main(["-"]) == 1
    assert capsys.readouterr().err.startswith("<stdin>:2:3: error: 'graph.add' op")


def test_split_input_file_reports_every_failing_chunk(write, capsys):
    text = GOOD + "// -----\n" + BAD_TYPES + "// -----\nfunc.func @p(\n// -----\n" + GOOD
    path = write(text)
    assert main([path, "--split-input-file"]) == 1
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:9:3: error: 'graph.add' op")
    assert lines[1].startswith(f"{path}:14:1: error: ") and ": error: " in lines[1]
    assert out.count("func.func @main") == 2 and out.count("// -----") == 3


# ---------------------------------------------------------------------------- 4. locations


def test_node_names_are_locations(write, capsys):
    path = write(conv_model(), "m.onnx")
    assert main([path, "--mlir-print-debuginfo"]) == 0
    out = capsys.readouterr().out
    assert 'graph.conv(' in out and 'loc("conv0")' in out and 'loc("relu0")' in out
    assert "onnx.node" not in out
    assert main([path]) == 0
    assert "loc(" not in capsys.readouterr().out


def test_locations_survive_graph_rewrites(write, capsys):
    assert main([write(conv_model(), "m.onnx"), "-O1", "--mlir-print-debuginfo"]) == 0
    fused = [line for line in capsys.readouterr().out.splitlines() if "graph.conv(" in line]
    assert len(fused) == 1 and 'activation = "relu"' in fused[0]
    assert fused[0].endswith('loc("relu0")')  # the fused op replaced the Relu node


def test_check_sites_name_the_node_from_its_location():
    from onnxc.passes.insert_checks import node_name

    graph = helper.make_graph(
        [helper.make_node("Gather", ["D", "I"], ["Y"], name="pick")], "g",
        [helper.make_tensor_value_info("D", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("I", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    module = import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    gather = next(op for op in module.walk() if op.name == "graph.gather")
    assert node_name(gather) == "pick"


# ---------------------------------------------------------------------------- 5. elision


def test_elide_large_constants(write, capsys):
    path = write(conv_model(), "m.onnx")
    assert main([path, "--mlir-elide-elementsattrs-if-larger=16"]) == 0
    out = capsys.readouterr().out
    assert "dense_resource<__elided__> : tensor<4x3x3x3xf32>" in out and 'dense<"0x' not in out
    assert main([path, "--mlir-elide-elementsattrs-if-larger=108"]) == 0
    assert "__elided__" not in capsys.readouterr().out
    assert main([path, "--mlir-elide-elementsattrs-if-larger=1", "-p", "cse",
                 "--mlir-print-ir-after-all"]) == 0
    assert "dense_resource<__elided__>" in capsys.readouterr().err


# ---------------------------------------------------------------------------- 6. pass listing


@pytest.mark.parametrize("name", sorted(ONNXC_PASSES))
def test_every_onnxc_pass_has_a_description(name):
    summary = pass_summary(ONNXC_PASSES[name]())
    assert len(summary) > 10 and not summary.startswith(f"{name}:")


def test_list_only_onnxc_passes_with_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--list-passes=onnxc"])
    assert exit_info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0] for line in lines[1:] if line.startswith("  --")}
    assert listed == {f"--{name}" for name in ONNXC_PASSES}
    at = next(i for i, line in enumerate(lines) if line.startswith("  --assign-layout "))
    assert lines[at + 1].strip() == "vector-bits: int = 0"
    assert any(line.startswith("  --fuse-conv-bn ") and "BatchNormalization" in line
               for line in lines)


def test_list_xdsl_passes(capsys):
    with pytest.raises(SystemExit):
        main(["--list-passes=xdsl"])
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]
              if line.startswith("  --")}
    assert "--canonicalize" in listed and "--fuse-conv-bn" not in listed


# ---------------------------------------------------------------------------- 7. targets


@pytest.mark.parametrize("target, reason", [
    ("x86-asm", "'x86-asm' is an xDSL target"), ("wgsl", "'wgsl' is an xDSL target"),
    ("nope", "unknown target 'nope'")])
def test_targets_that_do_not_work_are_refused(write, capsys, target, reason):
    with pytest.raises(SystemExit) as exit_info:
        main([write(GOOD), "-t", target])
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: argument -t/--target: " + reason)
    assert "--emit=asm|obj" in err


# ---------------------------------------------------------------------------- 8. input shapes


def test_symbolic_dims_import_or_take_input_shapes(write, capsys):
    path = write(conv_model("N"), "m.onnx")
    assert main([path]) == 0
    assert 'tensor<?x3x8x8xf32, #graph.dims<["N"]>>' in capsys.readouterr().out
    assert main([path, "--input-shapes", "X=2x3x8x8"]) == 0
    assert "tensor<2x3x8x8xf32>" in capsys.readouterr().out
    assert main([path, "--input-shapes", "Z=2x3x8x8"]) == 1
    assert "'Z', which is not a graph input" in capsys.readouterr().err
    assert main([write(GOOD), "--input-shapes", "x=2x3"]) == 1
    assert "--input-shapes applies to ONNX inputs" in capsys.readouterr().err


def test_api_input_shapes():
    model = conv_model("N")
    assert '#graph.dims<["N"]>' in str(import_onnx(model))
    module = import_onnx(model, input_shapes={"X": (2, 3, 8, 8)})
    assert "tensor<2x3x8x8xf32>" in str(module)
    optimized = onnxc.optimize(model, opt_level=1, input_shapes={"X": [3, 3, 8, 8]})
    assert "tensor<3x4x8x8xf32>" in str(optimized)
    with pytest.raises(InvalidArgumentError, match="input_shapes"):
        onnxc.optimize(model, input_shapes={"X": "1x3"})
    with pytest.raises(InvalidArgumentError, match="not to an imported module"):
        onnxc.optimize(import_onnx(conv_model()), input_shapes={"X": (1, 3, 8, 8)})
