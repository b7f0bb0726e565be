"""Where a benchmark run's tables go: `benchmarks/results/<YYYY-MM-DD>-<cpu>.md`.

Measurements written by hand into the README drifted and contradicted each other (one compile
time quoted five ways from four machines). Every benchmark script that prints a result table
now also appends it to a dated file named after the CPU it ran on, with the command that
produced it and the CPU's model and vector features, so a number always comes with where and
how it was measured, and a new run never overwrites an old one:

    with results_file.recording():      # in the script's `if __name__ == "__main__":`
        main()

`recording()` copies what the block prints to standard output (it still prints) and, when
the block finishes without an exception, appends one section to the day's file. Set
ONNXC_BENCH_RESULTS to a directory to write there instead, or to `off` to write nothing.
The CPU slug is the vendor and brand words of lscpu's model name and the microarchitecture
LLVM detects (`amd-epyc-zen3`, `intel-xeon-sapphirerapids`).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
         "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16",
         "amx_int8")
"""The CPU flags a results section lists (the ones that change which kernels run)."""

_NOISE = re.compile(r"\((?:r|tm)\)|\b(?:cpu|processor)\b|@.*$", re.IGNORECASE)


def lscpu_text() -> str:
    """`lscpu`'s output, empty where there is no lscpu."""
    try:
        return subprocess.run(["lscpu"], capture_output=True, text=True, check=False,
                              env={**os.environ, "LC_ALL": "C"}, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def lscpu_fields(text: str) -> dict[str, str]:
    """lscpu's `Key: value` lines as a dict."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def host_microarchitecture() -> str | None:
    """The microarchitecture LLVM detects (`znver3` -> `zen3`), None when it does not know."""
    try:
        import llvmlite.binding as llvm

        name = llvm.get_host_cpu_name()
    except Exception:  # noqa: BLE001 - no LLVM: no microarchitecture in the name
        return None
    if not name or name == "generic":
        return None
    return re.sub(r"^znver(\d+)$", r"zen\1", name)


def cpu_slug(text: str, microarchitecture: str | None = None) -> str:
    """`amd-epyc-zen3`: the first two words of the model name without trademarks, model
    numbers or clock, then the microarchitecture when known; `unknown-cpu` without lscpu."""
    model = _NOISE.sub(" ", lscpu_fields(text).get("Model name", "")).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", model) if w.isalpha()][:2]
    if microarchitecture:
        words.append(re.sub(r"[^a-z0-9]+", "-", microarchitecture.lower()).strip("-"))
    return "-".join(words) or "unknown-cpu"


def cpu_summary(text: str, microarchitecture: str | None = None) -> str:
    """One line: model name (microarchitecture), CPU count, the FLAGS it has."""
    fields = lscpu_fields(text)
    have = set(fields.get("Flags", "").split())
    model = fields.get("Model name", "unknown CPU")
    if microarchitecture:
        model += f" ({microarchitecture})"
    flags = ", ".join(f for f in FLAGS if f in have) or "none of " + ", ".join(FLAGS[:3])
    return f"{model}, {fields.get('CPU(s)', '?')} CPUs; flags: {flags}"


def results_path(when: datetime.datetime, slug: str, directory: Path = RESULTS,
                 topic: str = "") -> Path:
    """The day's file for this CPU; a `topic` (a benchmark with a file of its own) goes
    between the date and the CPU: `2026-12-05-nbits-amd-epyc-zen4.md`."""
    return directory / f"{when:%Y-%m-%d}-{topic + '-' if topic else ''}{slug}.md"


def command_line(argv: list[str] | None = None) -> str:
    """How the script was run, relative to the repository (`python benchmarks/bench.py -n 3`)."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]) if argv else Path("?")
    with contextlib.suppress(ValueError):
        script = script.resolve().relative_to(RESULTS.parents[1])
    return shlex.join(["python", str(script), *argv[1:]])


def append(table: str, *, command: str, when: datetime.datetime | None = None,
           lscpu: str | None = None, microarchitecture: str | None = None,
           directory: Path = RESULTS, topic: str = "") -> Path:
    """Append one section (command, date, CPU, the table) to the day's file for this CPU,
    creating the file with a title if needed; returns its path."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    text = lscpu_text() if lscpu is None else lscpu
    slug = cpu_slug(text, microarchitecture)
    path = results_path(when, slug, directory, topic)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "" if path.exists() else (
        f"# Benchmark results, {when:%Y-%m-%d}, {slug}\n\n"
        "Written by the scripts in benchmarks/ (benchmarks/results_file.py), one section "
        "per run; do not edit.\n")
    section = (f"\n## `{command}`\n\n"
               f"- date: {when:%Y-%m-%d %H:%M} UTC\n"
               f"- CPU: {cpu_summary(text, microarchitecture)}\n\n"
               f"```text\n{table.strip(chr(10))}\n```\n")
    with path.open("a", encoding="utf-8") as f:
        f.write(head + section)
    return path


class _Tee(io.TextIOBase):
    def __init__(self, stream, copy: io.StringIO):
        self.stream, self.copy = stream, copy

    def write(self, s: str) -> int:
        self.copy.write(s)
        return self.stream.write(s)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()


@contextlib.contextmanager
def recording(argv: list[str] | None = None, topic: str = "") -> Iterator[None]:
    """Print as usual, and append what was printed to the results file if the block ends
    without an exception (see the module docstring)."""
    setting = os.environ.get("ONNXC_BENCH_RESULTS", "")
    copy = io.StringIO()
    real = sys.stdout
    sys.stdout = _Tee(real, copy)
    try:
        yield
    finally:
        sys.stdout = real
    if setting.lower() == "off" or not copy.getvalue().strip():
        return
    directory = Path(setting) if setting else RESULTS
    path = append(copy.getvalue(), command=command_line(argv),
                  microarchitecture=host_microarchitecture(), directory=directory,
                  topic=topic)
    print(f"results appended to {path}", file=sys.stderr)
