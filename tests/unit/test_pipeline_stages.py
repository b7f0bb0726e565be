"""onnxc.pipeline lists every compile stage once: the names the compile is timed and
shown under, the `onnxc-opt --emit` stops, and the passes each lowering stage runs."""

from __future__ import annotations

from onnxc import pipeline
from onnxc.progress import STAGE_DESCRIPTIONS
from onnxc.tools import emit


def test_stages_run_from_import_to_machine_code():
    assert [s.name for s in pipeline.STAGES] == [
        "import", "graph-passes", "graph-to-loops", "loops-abi", "loops-to-llvm", "llvm-ir",
        "machine-code"]


def test_every_timed_stage_has_a_progress_description():
    assert {s.timed_as for s in pipeline.STAGES} <= set(STAGE_DESCRIPTIONS)


def test_emit_stages_follow_the_pipeline():
    assert emit.STAGES == ("graph", "loops", "llvm-dialect", "llvm-ir", "asm", "obj", "lib")


def test_lowering_passes_are_the_stages_passes_in_order():
    loops = (*pipeline.graph_to_loops("bf16"), *pipeline.LOOPS_ABI)
    assert pipeline.lowering_passes("graph") == ()
    assert pipeline.lowering_passes("loops", precision="bf16") == loops
    llvm = (*loops, *pipeline.loops_to_llvm("f", 3))
    for stop in ("llvm-dialect", "llvm-ir", "asm", "obj", "lib"):
        assert pipeline.lowering_passes(stop, precision="bf16", entry="f", num_threads=3) == llvm
