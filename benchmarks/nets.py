"""onnxc next to onnxruntime and OpenVINO on real torchvision and Hugging Face exports.

benchmarks/bench.py times the built-in models; this times the nets benchmarks/nets_export.py
writes (ResNet, MobileNet, EfficientNet, ConvNeXt, ViT, Swin, DeepLabV3, BERT, GPT-2, ...,
exported by torch.onnx as users do, seeded random weights). For each net and thread count T,
each runtime is timed in a worker process of its own (onnxc.tools.bench's measure_runtimes:
medians of `--repeat` rounds after a warm-up, preallocated outputs), and onnxc's outputs are
checked against onnxruntime's (rtol 1e-3, atol 1e-4). A net that onnxc (or a peer) fails to
compile or run keeps its row, with the error, and the run goes on. `--interleaved` (T=1
only) runs every runtime in this one process in alternating rounds instead: a burst of
load from a VM's neighbours then hits each runtime alike, so the ratios hold where
separate processes' medians move 20-60% from one start to the next.

    /work/venvs/export/bin/python benchmarks/nets_export.py      # once: ~/.cache/onnxc/nets/
    python benchmarks/nets.py [--dir DIR] [--models resnet50,bert_base] [--threads 1,2]
                              [--repeat 10] [--passes 1] [--opt-level 3] [--cache]
                              [--compare onnxruntime,openvino] [--interleaved]

Inputs: images uniform in [0, 1); token ids seeded below the vocabulary size the manifest
gives, attention masks all ones, token type ids zeros.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from bench import geomean
from onnxc.errors import InvalidArgumentError, OnnxcError
from onnxc.tools import bench as command
from onnxc.tools.bench_runners import REFERENCE, check_available, parse_compare
from onnxc.tools.bench_worker import Measurement, TimingSettings
from onnxc.tools.diagnostics import one_line

DEFAULT_DIR = Path.home() / ".cache" / "onnxc" / "nets"


def manifest(directory: Path) -> dict[str, dict]:
    """The nets of `directory` by name: its manifest.json's entries, and any other .onnx file
    there with an empty entry."""
    path = directory / "manifest.json"
    nets = json.loads(path.read_text())["nets"] if path.exists() else {}
    for file in sorted(directory.glob("*.onnx")):
        nets.setdefault(file.stem, {"file": file.name})
    return {k: v for k, v in nets.items() if (directory / v["file"]).exists()}


def choose(nets: Mapping[str, dict], models: str | None, directory: Path) -> list[str]:
    """The names `--models a,b` asks for (default: all), InvalidArgumentError for one not
    exported."""
    if not models:
        if not nets:
            raise InvalidArgumentError(f"no exported nets in {directory}; run "
                                       f"benchmarks/nets_export.py in the export venv first")
        return list(nets)
    names = [n.strip() for n in models.split(",") if n.strip()]
    missing = [n for n in names if n not in nets]
    if missing or not names:
        raise InvalidArgumentError(
            f"--models: {', '.join(missing) or '(none)'} not in {directory} (exported: "
            f"{', '.join(nets) or 'none'}; benchmarks/nets_export.py writes them)")
    return list(dict.fromkeys(names))


def _vocab_from_graph(model: onnx.ModelProto, name: str) -> int | None:
    """Rows of the embedding table a Gather looks `name` up in (no manifest entry)."""
    sizes = {t.name: t.dims[0] for t in model.graph.initializer if t.dims}
    return next((sizes[n.input[0]] for n in model.graph.node
                 if n.op_type == "Gather" and n.input[1] == name and n.input[0] in sizes), None)


def net_inputs(model: onnx.ModelProto, entry: Mapping) -> dict[str, np.ndarray]:
    """bench's seeded inputs (floats in [0, 1), integers zero) with the integer inputs made
    valid: token ids in [0, vocab), attention masks all ones. The manifest says which input
    is which; without it, the input's name does."""
    feeds = command.seeded_inputs(None, model)
    kinds = {i["name"]: i for i in entry.get("inputs", [])}
    rng = np.random.default_rng(command.INPUT_SEED)
    for name, value in feeds.items():
        if not np.issubdtype(value.dtype, np.integer):
            continue
        spec = kinds.get(name, {})
        kind = spec.get("kind") or ("ones" if name.endswith("attention_mask")
                                    else "token_ids" if name.endswith("input_ids") else "zeros")
        if kind == "ones":
            feeds[name] = np.ones_like(value)
        elif kind == "token_ids":
            vocab = spec.get("vocab") or _vocab_from_graph(model, name)
            if vocab:
                feeds[name] = rng.integers(0, vocab, value.shape).astype(value.dtype)
    return feeds


@dataclass
class Row:
    model: str
    threads: int
    seconds: dict[str, float]
    """median seconds per call of each runtime that ran"""
    compile_s: float | None = None
    max_diff: float | None = None
    matches: bool | None = None
    errors: tuple[str, ...] = ()

    @property
    def ratio(self) -> float | None:
        """onnxc / onnxruntime."""
        if "onnxc" in self.seconds and "onnxruntime" in self.seconds:
            return self.seconds["onnxc"] / self.seconds["onnxruntime"]
        return None

    @property
    def best_ratio(self) -> float | None:
        """onnxc / the faster of the peers that ran."""
        peers = [s for r, s in self.seconds.items() if r != "onnxc"]
        return self.seconds["onnxc"] / min(peers) if "onnxc" in self.seconds and peers else None


def describe(err: Exception) -> str:
    """An error's type and first line, for its row."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {one_line(lines[0]) if lines else ''}".strip()


def bench_net(name: str, path: Path, entry: Mapping, runtimes: Sequence[str],
              threads: Sequence[int], settings: TimingSettings, passes: int = 1,
              interleaved: bool = False) -> list[Row]:
    """One row per thread count; each runtime measured alone, so one that fails (its error in
    the row) leaves the others' times; `passes` worker starts per runtime, rounds pooled.
    `interleaved`: all runtimes in this process, alternating rounds (T=1)."""
    model = onnx.load(str(path))
    feeds = net_inputs(model, entry)
    del model
    rows = []
    with tempfile.TemporaryDirectory(prefix="onnxc-nets-") as workdir:
        for t in threads:
            measured: dict[str, Measurement] = {}
            errors = []
            for group in [list(runtimes)] if interleaved else [[r] for r in runtimes]:
                try:
                    measured.update(zip(group, command.measure_runtimes(
                        group, str(path), feeds, t, settings, workdir, interleaved=interleaved,
                        passes=passes), strict=True))
                except Exception as err:  # noqa: BLE001 - the row says it, the run goes on
                    errors.append(f"{'+'.join(group)}: {describe(err)}")
            row = Row(name, t, {r: m.seconds for r, m in measured.items()}, errors=tuple(errors))
            if "onnxc" in measured:
                row.compile_s = measured["onnxc"].prepare_seconds
                if "onnxruntime" in measured:
                    row.max_diff, row.matches = command.compare_outputs(
                        measured["onnxruntime"].outputs, measured["onnxc"].outputs)
            rows.append(row)
    return rows


HEADER = (f"{'model':<30}{'T':>2}{'onnxc ms':>10}{'ort ms':>9}{'ov ms':>9}{'onnxc/ort':>10}"
          f"{'onnxc/best':>11}{'max|diff|':>10}{'check':>9}{'compile s':>10}")


def _cell(value: float | None, width: int, spec: str) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}{spec}}"


def format_row(row: Row) -> str:
    ms = {r: s * 1e3 for r, s in row.seconds.items()}
    check = "-" if row.matches is None else "ok" if row.matches else "MISMATCH"
    text = (f"{row.model:<30}{row.threads:>2}{_cell(ms.get('onnxc'), 10, '.2f')}"
            f"{_cell(ms.get('onnxruntime'), 9, '.2f')}{_cell(ms.get('openvino'), 9, '.2f')}"
            f"{_cell(row.ratio, 10, '.2f')}{_cell(row.best_ratio, 11, '.2f')}"
            f"{_cell(row.max_diff, 10, '.1e')}{check:>9}{_cell(row.compile_s, 10, '.1f')}")
    return text + "".join(f"  [{e}]" for e in row.errors)


def summary(rows: Sequence[Row], threads: Sequence[int]) -> list[str]:
    """Per T: the geometric means of onnxc/onnxruntime and onnxc/best peer over the nets
    where both ran, and the worst net; then the mismatches and failures."""
    lines = []
    for t in threads:
        at = [r for r in rows if r.threads == t and r.best_ratio is not None]
        if not at:
            lines.append(f"T={t}: no net ran on onnxc and a peer")
            continue
        worst = max(at, key=lambda r: r.best_ratio)
        ort = [r.ratio for r in at if r.ratio is not None]
        ort_text = f"onnxc/onnxruntime {geomean(ort):.2f}, " if ort else ""
        lines.append(f"geometric mean at T={t} over {len(at)} nets: {ort_text}onnxc/best peer "
                     f"{geomean([r.best_ratio for r in at]):.2f} (max {worst.best_ratio:.2f}, "
                     f"{worst.model})")
    mismatches = [f"{r.model} (T={r.threads})" for r in rows if r.matches is False]
    if mismatches:
        lines.append(f"MISMATCH beyond rtol {command.RTOL}/atol {command.ATOL}: "
                     f"{', '.join(mismatches)}")
    failed = [f"{r.model} (T={r.threads})" for r in rows if r.errors]
    if failed:
        lines.append(f"failures: {', '.join(failed)}")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(os.environ.get("ONNXC_NETS", DEFAULT_DIR)),
                        help=f"the exported nets and their manifest.json (default: $ONNXC_NETS "
                        f"or {DEFAULT_DIR})")
    parser.add_argument("--models", help="comma-separated net names (default: all in --dir)")
    parser.add_argument("--threads", default="1,2", help="thread counts (every runtime), e.g. 1,2")
    parser.add_argument("--repeat", type=int, default=10, help="timed rounds per runtime")
    parser.add_argument("--opt-level", type=int, default=3)
    parser.add_argument("--cache", action="store_true",
                        help="let onnxc use its disk compile cache (compile s is then a load)")
    parser.add_argument("--passes", type=int, default=1,
                        help="start each runtime's worker N times and pool their rounds "
                             "(steadier where a VM's cores are noisy, as at T=2)")
    parser.add_argument("--compare", default="onnxruntime,openvino",
                        help="peers timed next to onnxc (default: onnxruntime,openvino)")
    parser.add_argument("--interleaved", action="store_true",
                        help="T=1 only: every runtime in this process, alternating rounds")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.passes < 1:
        parser.error("--repeat and --passes must be at least 1")
    args.threads = command.parse_threads(args.threads)
    if args.interleaved and args.threads != [1]:
        parser.error("--interleaved times one thread only (--threads 1): at two or more, "
                     "each runtime's threads must have the cores to themselves")
    args.runtimes = [REFERENCE, *parse_compare(args.compare)]
    return args


def main(argv: Sequence[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    nets = manifest(args.dir)
    names = choose(nets, args.models, args.dir)
    for runtime in args.runtimes:
        check_available(runtime)
    settings = TimingSettings(args.repeat, opt_level=args.opt_level, cache=args.cache)
    where = ("all in this process, interleaved" if args.interleaved
             else "each runtime in its own process")
    print(f"nets from {args.dir}; {where}, medians of {args.repeat} rounds; "
          f"onnxc -O{args.opt_level} num_threads=T, compile s "
          f"{'may be a disk-cache load' if args.cache else 'is a cold compile'}; onnxruntime "
          f"ORT_ENABLE_ALL, OpenVINO f32 LATENCY; best = the faster peer")
    print(HEADER, flush=True)
    rows: list[Row] = []
    versions: dict[str, str] = {}
    for name in names:
        entry = nets[name]
        for row in bench_net(name, args.dir / entry["file"], entry, args.runtimes, args.threads,
                             settings, args.passes, args.interleaved):
            rows.append(row)
            print(format_row(row), flush=True)
        for key, value in entry.get("versions", {}).items():
            versions.setdefault(key, value)
    for line in summary(rows, args.threads):
        print(line)
    print(f"runtimes: {runtime_versions(args.runtimes)}; exported with "
          f"{', '.join(f'{k} {v}' for k, v in versions.items()) or 'unknown tools'}")
    return rows


def runtime_versions(runtimes: Sequence[str]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in runtimes:
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} ?")
    return ", ".join(found)


if __name__ == "__main__":
    import results_file

    try:
        with results_file.recording():
            main()
    except OnnxcError as err:
        sys.exit(f"error: {err}")
