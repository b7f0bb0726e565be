"""`onnxc-opt` in-process: exit codes, one-line located errors, stderr-only instrumentation."""

import pytest
from xdsl.utils.exceptions import VerifyException

from onnxc.tools.opt import OnnxcOptMain, main

GOOD = """\
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.add(%0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
"""

BAD_VERIFY = """\
func.func @f(%x: tensor<2x3xf32>, %y: tensor<3xi32>) -> tensor<2x3xf32> {
  %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.mul(%0, %y) : (tensor<2x3xf32>, tensor<3xi32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
"""


@pytest.fixture
def write(tmp_path):
    def write(text: str, name: str = "input.mlir") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def test_success_prints_ir_to_stdout_only(write, capsys):
    assert main([write(GOOD), "-p", "cse"]) == 0
    out, err = capsys.readouterr()
    assert "graph.add(%0, %0)" in out
    assert err == ""


def test_verifier_error_is_one_located_line(write, capsys, monkeypatch):
    monkeypatch.delenv("ONNXC_DEBUG", raising=False)
    path = write(BAD_VERIFY)
    assert main([path]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"{path}:3:5: error: 'graph.mul' op operand element types differ\n"


def test_verifier_error_line_counts_across_split_chunks(write, capsys):
    path = write(GOOD + "// -----\n" + BAD_VERIFY)
    assert main([path, "--split-input-file"]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:10:5: error: 'graph.mul' op")


def test_verify_diagnostics_keeps_xdsl_behaviour(write, capsys):
    assert main([write(BAD_VERIFY), "--verify-diagnostics"]) == 0
    out, _ = capsys.readouterr()
    assert "Operation does not verify: graph.mul: operand element types differ" in out


def test_parse_error(write, capsys):
    path = write("func.func @f() {\n  %0 = graph.relu(%x : tensor<2xf32>\n}\n")
    assert main([path]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:") and ": error: " in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_unknown_pass(write, capsys):
    assert main([write(GOOD), "-p", "cse,canonicalise"]) == 1
    assert capsys.readouterr().err == (
        "error: unknown pass 'canonicalise'; did you mean 'canonicalize'? (see --list-passes)\n"
    )


def test_onnxc_error_from_frontend(write, capsys):
    model = (
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "agraph (float[2] X) => (float[2] Y) {\n  Y = Nope(X)\n}\n"
    )
    assert main([write(model, "m.onnxtxt")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unsupported op 'Nope'") and err.count("\n") == 1


def test_debug_env_reraises(write, monkeypatch):
    monkeypatch.setenv("ONNXC_DEBUG", "1")
    with pytest.raises(VerifyException):
        main([write(BAD_VERIFY)])


def test_ir_dumps_and_timing_go_to_stderr(write, capsys):
    assert main([write(GOOD), "--pass-pipeline=builtin.module(func.func(cse),dce)",
                 "--mlir-print-ir-after-all", "--mlir-timing"]) == 0
    out, err = capsys.readouterr()
    assert "IR Dump" not in out and "Execution time report" not in out
    cse = err.index("// -----// IR Dump After CsePass (cse) //----- //")
    dce = err.index("// -----// IR Dump After DeadCodeElimination (dce) //----- //")
    assert cse < dce < err.index("Execution time report")


def test_pass_pipeline_flattens_to_the_same_passes(write):
    nested = OnnxcOptMain(args=[write(GOOD), "--pass-pipeline",
                                "builtin.module(func.func(cse,canonicalize),dce)"])
    flat = OnnxcOptMain(args=[write(GOOD), "-p", "cse,canonicalize,dce"])
    assert nested.pipeline.passes == flat.pipeline.passes
    assert [p.name for p in nested.pipeline.passes] == ["cse", "canonicalize", "dce"]


def test_list_passes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--list-passes"])
    assert exit_info.value.code == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]}
    from onnxc.registry import ONNXC_PASSES

    assert {f"--{name}" for name in ONNXC_PASSES} <= listed
    assert {"--cse", "--dce", "--canonicalize", "--convert-scf-to-cf",
            "--reconcile-unrealized-casts"} <= listed


def test_text_that_is_not_utf8_is_one_located_line(tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_bytes(b'func.func @f() {\n  %x = "test.op"() : () -> \xff\n}\n')
    assert main([str(path)]) == 1
    assert capsys.readouterr().err == f"{path}:2:28: error: input is not UTF-8 text (byte 0xff)\n"
