"""`onnxc-opt --list-passes[=onnxc|xdsl]`: every pass with its one-line description and options.

Like `mlir-opt --help`, the listing is generated from the passes themselves: a pass's
description is the first sentence of its class docstring, its options are the dataclass fields
that `-p 'name{option=value}'` sets. Users read it to find a pass and how to configure it, so
a pass without a docstring is a gap the unit tests refuse.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping

from xdsl.passes import ModulePass

from onnxc.registry import ONNXC_PASSES
from onnxc.tools.diagnostics import one_line

PassFactory = Callable[[], type[ModulePass]]

LISTINGS = ("all", "onnxc", "xdsl")
"""What `--list-passes=WHICH` takes: every pass, only onnxc's, or only xDSL's."""

_SENTENCE_END = re.compile(r"(?<=[\w)\]`'\"])\.(?=\s+[A-Z(`]|\s*$)")
"""A full stop that ends a sentence (not the dots of `...` or `1.5`)."""


def pass_summary(cls: type[ModulePass]) -> str:
    """The first sentence of the pass class's own docstring, without a leading `name:`."""
    doc = cls.__dict__.get("__doc__") or ""
    if doc.startswith(f"{cls.__name__}("):  # the signature dataclasses put in __doc__
        return ""
    paragraph = one_line(doc.strip().split("\n\n")[0])
    paragraph = paragraph.removeprefix(f"{cls.name}:").strip()
    end = _SENTENCE_END.search(paragraph)
    sentence = paragraph if end is None else paragraph[: end.start()]
    return sentence


def pass_options(cls: type[ModulePass]) -> list[str]:
    """`option-name: type = default` for each option of the pass (its dataclass fields)."""
    rows = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        kind = field.type if isinstance(field.type, str) else getattr(
            field.type, "__name__", str(field.type))
        if field.default is not dataclasses.MISSING:
            default = f" = {field.default!r}"
        elif field.default_factory is not dataclasses.MISSING:
            default = f" = {field.default_factory()!r}"
        else:
            default = " (required)"
        rows.append(f"{field.name.replace('_', '-')}: {kind}{default}")
    return rows


def _load(factory: PassFactory) -> type[ModulePass] | str:
    try:
        return factory()
    except Exception as err:  # noqa: BLE001 - a pass still being written must not hide others
        return f"(unavailable: {type(err).__name__}: {err})"


def pass_listing(available: Mapping[str, PassFactory], which: str = "all") -> list[str]:
    """The lines of `--list-passes=which`: `  --name   description`, then its options."""
    names = sorted(available)
    if which == "onnxc":
        names = [n for n in names if available[n] is ONNXC_PASSES.get(n)]
    elif which == "xdsl":
        names = [n for n in names if available[n] is not ONNXC_PASSES.get(n)]
    title = {"all": "Available Passes:", "onnxc": "onnxc Passes:", "xdsl": "xDSL Passes:"}
    rows = [title[which]]
    width = max(map(len, names), default=0) + 2
    for name in names:
        cls = _load(available[name])
        summary = cls if isinstance(cls, str) else pass_summary(cls)
        rows.append(f"  --{name:<{width}}{summary}".rstrip())
        if not isinstance(cls, str):
            rows += [f"      {option}" for option in pass_options(cls)]
    return rows


__all__ = ["LISTINGS", "pass_listing", "pass_options", "pass_summary"]
