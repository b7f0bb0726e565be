"""What a failed run-time check means to the user: the `InvalidInputError` a run raises.

The native entry returns k + 1 when check k refused its data (lowering/check_status.py) and
leaves the record [failed, position, value] in the run's arena; the compiled model keeps one
site description per check (dialects/entry_abi.py `check_sites`). Together they name the
node, the op, the operand, the bad value, where it is and what was allowed, the way
onnxruntime's INVALID_ARGUMENT messages do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import SymbolicDimError
from onnxc.errors import InvalidInputError

STATUS_RECORD_BYTES = 24
"""[failed, position, value], three int64s, in the arena at the model's status offset."""


def check_failure(site: Mapping[str, object], position: int, value: int,
                  sample: int | None = None,
                  sizes: Mapping[str, int] | None = None) -> InvalidInputError:
    """The error for `site`'s check finding `value` at flat `position` of its operand;
    `sizes`: the run's symbol values, which give a symbolic axis' range its numbers."""
    node = str(site.get("node", ""))
    where = f"node '{node}'" if node else "an unnamed node"
    where += f" ({site.get('op_type', '?')})"
    operand = site.get("operand", "?")
    in_sample = f" in sample {sample}" if sample is not None else ""
    if site.get("kind") == "size":
        guard = str(site.get("guard", "?"))
        size = guard.rsplit(" ", 2)[0]
        symbols = ""
        try:
            names = sorted(parse_dim(size).symbols()) if sizes is not None else []
            symbols = ", ".join(f"{s} = {sizes[s]}" for s in names)  # type: ignore[index]
        except (SymbolicDimError, KeyError, AttributeError):
            pass
        return InvalidInputError(
            f"{where}: the input sizes break a condition of the model: "
            f"{site.get('reason', guard)}" + (f" ({symbols})" if symbols else ""))
    if site.get("kind") == "divisor":
        what = "modulo" if site.get("op_type") == "Mod" else "division"
        return InvalidInputError(
            f"{where}: integer {what} by zero: element {position} of divisor '{operand}'"
            f"{in_sample} is 0")
    ranges: Sequence[Sequence[int]] = site.get("ranges") or [[0, -1]]  # type: ignore[assignment]
    symbolic = site.get("symbolic_ranges")
    extent = ""
    if isinstance(symbolic, str):  # an axis of symbolic size: its range in this run
        ranges, extent = _run_ranges(symbolic, sizes)
    low, high = ranges[position % len(ranges)]
    return InvalidInputError(
        f"{where}: {operand} value {value} at position {position}{in_sample} is out of range "
        f"[{low}, {high}]{extent}")


def _run_ranges(text: str, sizes: Mapping[str, int] | None
                ) -> tuple[Sequence[Sequence[object]], str]:
    """A site's `symbolic_ranges` (`-seq,seq-1;0,7`: dialects/graph_checks.py
    `symbolic_ranges_text`) for the run's symbol values, and what to say after the range
    (` (seq = 5)`); without the values, the polynomials themselves."""
    try:
        columns = [[parse_dim(b) for b in column.split(",")] for column in text.split(";")]
    except SymbolicDimError:
        columns = []
    if not columns or any(len(column) != 2 for column in columns):
        return [["?", "?"]], f" ({text})"  # not what the compiler writes
    symbols = sorted({s for column in columns for d in column
                      if not isinstance(d, int) for s in d.symbols()})
    if sizes is None or any(s not in sizes for s in symbols):
        return [[str(d) for d in column] for column in columns], ""
    ranges = [[d if isinstance(d, int) else d.evaluate(sizes) for d in column]
              for column in columns]
    return ranges, " (" + ", ".join(f"{s} = {sizes[s]}" for s in symbols) + ")"


__all__ = ["STATUS_RECORD_BYTES", "check_failure"]
