"""Sizes as text: the parser of `str(SymDim)`, which is how `#graph.dims`, `#graph.sizes`,
guards, cache entries and artifact manifests store them. Kept apart from the algebra
(symbolic_dims.py): the parser only builds sizes with its public arithmetic."""

from __future__ import annotations

import functools
import re

from onnxc.dialects.symbolic_dims import (
    Dim,
    SymbolicDimError,
    SymDim,
    ceildiv,
    floordiv,
    mod,
    sym_max,
    sym_min,
)

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")


class _Parser:
    """`2*seq+1`, `past+seq`, `floordiv(H-1, 2)+1`, `min(seq, 128)`, `ceildiv(W, 32)`,
    `mod(seq, 4)`: the inverse of `str(SymDim)`, plus ceildiv and mod."""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        for m in _TOKEN.finditer(text):
            if m.group(1):
                self.tokens.append(("int", m.group(1)))
            elif m.group(2):
                self.tokens.append(("name", m.group(2)))
            elif m.group(3) and not m.group(3).isspace():
                self.tokens.append(("op", m.group(3)))
        self.pos = 0

    def fail(self) -> SymbolicDimError:
        return SymbolicDimError(f"'{self.text}' is not a dimension expression")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, op: str) -> bool:
        if self.peek() == ("op", op):
            self.pos += 1
            return True
        return False

    def parse(self) -> Dim:
        if not self.tokens:
            raise SymbolicDimError("empty dimension")
        value = self.sum()
        if self.pos != len(self.tokens):
            raise self.fail()
        return value

    def sum(self) -> Dim:
        sign = -1 if self.take("-") else 1
        total: Dim = sign * self.product()
        while True:
            if self.take("+"):
                total = total + self.product()
            elif self.take("-"):
                total = total - self.product()
            else:
                return total

    def product(self) -> Dim:
        value = self.factor()
        while self.take("*"):
            value = value * self.factor()
        return value

    def factor(self) -> Dim:
        token = self.peek()
        if token is None:
            raise self.fail()
        self.pos += 1
        kind, text = token
        if kind == "int":
            return int(text)
        if kind == "op" and text == "(":
            value = self.sum()
            if not self.take(")"):
                raise self.fail()
            return value
        if kind != "name":
            raise self.fail()
        if not self.take("("):
            return SymDim.symbol(text)
        args = [self.sum()]
        while self.take(","):
            args.append(self.sum())
        if not self.take(")"):
            raise self.fail()
        binary = {"floordiv": floordiv, "ceildiv": ceildiv, "mod": mod}
        if text in binary and len(args) == 2:
            return binary[text](*args)
        if text in ("min", "max") and args:
            return sym_min(*args) if text == "min" else sym_max(*args)
        raise self.fail()


@functools.lru_cache(maxsize=16384)
def parse_dim(text: str) -> Dim:
    """The inverse of `str(SymDim)`: `seq`, `2*seq+1`, `past+seq`, `floordiv(H-1, 2)+1`
    (cached: every `shape_of` of a symbolic type parses its `#graph.dims`)."""
    return _Parser(text.strip()).parse()


__all__ = ["parse_dim"]
