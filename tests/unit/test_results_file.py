"""benchmarks/results_file.py: the file a benchmark run appends its table to (its name from
the date and a CPU slug read from lscpu), and the recording of what a script prints."""

import datetime
import importlib.util
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "results_file.py"
spec = importlib.util.spec_from_file_location("results_file", PATH)
results_file = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results_file)

EPYC = """\
Architecture:                         x86_64
CPU(s):                               2
Vendor ID:                            AuthenticAMD
Model name:                           AMD EPYC 7B13 64-Core Processor
CPU family:                           25
Flags:                                fpu sse4_2 avx avx2 fma f16c
"""

XEON = """\
CPU(s):              8
Model name:          Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz
Flags:               avx2 avx512f avx512_bf16 amx_tile
"""

WHEN = datetime.datetime(2026, 12, 5, 14, 0, tzinfo=datetime.timezone.utc)


def test_cpu_slug_from_lscpu():
    assert results_file.cpu_slug(EPYC, "zen3") == "amd-epyc-zen3"
    assert results_file.cpu_slug(EPYC) == "amd-epyc"
    assert results_file.cpu_slug(XEON, "sapphirerapids") == "intel-xeon-sapphirerapids"
    assert results_file.cpu_slug("") == "unknown-cpu"


def test_file_name_is_date_and_cpu(tmp_path):
    path = results_file.append("| a |\n|---|\n| 1 |\n", command="python benchmarks/x.py",
                               when=WHEN, lscpu=EPYC, microarchitecture="zen3",
                               directory=tmp_path)
    assert path == tmp_path / "2026-12-05-amd-epyc-zen3.md"


def test_sections_are_appended(tmp_path):
    for n in (1, 2):
        path = results_file.append(f"| n |\n|---|\n| {n} |", command=f"python b.py --n {n}",
                                   when=WHEN, lscpu=EPYC, microarchitecture="zen3",
                                   directory=tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.count("# Benchmark results, 2026-12-05, amd-epyc-zen3") == 1
    assert text.index("## `python b.py --n 1`") < text.index("## `python b.py --n 2`")
    assert "- date: 2026-12-05 14:00 UTC" in text
    assert ("- CPU: AMD EPYC 7B13 64-Core Processor (zen3), 2 CPUs; "
            "flags: sse4_2, avx, avx2, fma, f16c") in text
    assert "| 1 |" in text and "| 2 |" in text


def test_recording_tees_stdout_and_skips_failed_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ONNXC_BENCH_RESULTS", str(tmp_path))
    with results_file.recording(["benchmarks/demo.py", "--fast"]):
        print("| x |\n|---|\n| 3 |")
    assert "| 3 |" in capsys.readouterr().out
    (written,) = tmp_path.iterdir()
    assert "## `python benchmarks/demo.py --fast`" in written.read_text(encoding="utf-8")
    with pytest.raises(RuntimeError), results_file.recording(["demo.py"]):
        print("| half a table |")
        raise RuntimeError
    assert "half a table" not in written.read_text(encoding="utf-8")
    assert sys.stdout is not None


def test_recording_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ONNXC_BENCH_RESULTS", "off")
    monkeypatch.setattr(results_file, "RESULTS", tmp_path)
    with results_file.recording(["demo.py"]):
        print("| x |")
    assert not list(tmp_path.iterdir())
