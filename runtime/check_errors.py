"""What a failed run-time check means to the user: the `InvalidInputError` a run raises.

The native entry returns k + 1 when check k refused its data (lowering/check_status.py) and
leaves the record [failed, position, value] in the run's arena; the compiled model keeps one
site description per check (lowering/entry_abi.py `check_sites`). Together they name the
node, the op, the operand, the bad value, where it is and what was allowed, the way
onnxruntime's INVALID_ARGUMENT messages do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from onnxc.errors import InvalidInputError

STATUS_RECORD_BYTES = 24
"""[failed, position, value], three int64s, in the arena at the model's status offset."""


def check_failure(site: Mapping[str, object], position: int, value: int,
                  sample: int | None = None) -> InvalidInputError:
    """The error for `site`'s check finding `value` at flat `position` of its operand."""
    node = str(site.get("node", ""))
    where = f"node '{node}'" if node else "an unnamed node"
    where += f" ({site.get('op_type', '?')})"
    operand = site.get("operand", "?")
    in_sample = f" in sample {sample}" if sample is not None else ""
    if site.get("kind") == "divisor":
        what = "modulo" if site.get("op_type") == "Mod" else "division"
        return InvalidInputError(
            f"{where}: integer {what} by zero: element {position} of divisor '{operand}'"
            f"{in_sample} is 0")
    ranges: Sequence[Sequence[int]] = site.get("ranges") or [[0, -1]]  # type: ignore[assignment]
    low, high = ranges[position % len(ranges)]
    return InvalidInputError(
        f"{where}: {operand} value {value} at position {position}{in_sample} is out of range "
        f"[{low}, {high}]")


__all__ = ["STATUS_RECORD_BYTES", "check_failure"]
