"""The sizes of a symbolic model's artifact, as C: binding, dynamic arena, output shapes.

A model compiled with symbolic dimensions runs at any input shape. In Python,
runtime/symbolic_shapes.py binds each size symbol from the input arrays, checks that the
inputs agree and sizes the dynamic arena and the outputs from the compiler's polynomials.
An ahead-of-time artifact must do the same without Python, so this module writes those
computations as C functions for its layout.c (runtime/c/onnxc_model.c calls them):

    int32_t onnxc_bind(const int64_t *const *input_shapes, int64_t *d, char *msg, size_t n)
    int32_t onnxc_dynamic_bytes(const int64_t *d, int64_t *bytes)
    int32_t onnxc_output_dims(const int64_t *d, int room, int64_t *const *shapes)

`d` is the entry's `dims` buffer (one value per symbol, lowering/entry_abi.py). Every size
is evaluated with overflow checks and floor division as symbolic_dims.py defines it, since
the shapes come from the caller: a negative or inconsistent shape, or sizes past 2^63, are
an error status with a message, never a wrong allocation. A run symbol (a size the data
decides: NonMaxSuppression's count) starts at its bound; outputs are allocated for the
bound (`room`: size_substitution.monotone_upper) and the run writes the real count back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from onnxc.dialects.size_substitution import monotone_upper
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import Dim, SizeFn, SymDim

_HELPERS = r"""
static int64_t sz_add(int64_t a, int64_t b, int *bad) {
    int64_t r; if (__builtin_add_overflow(a, b, &r)) *bad = 1; return r; }
static int64_t sz_mul(int64_t a, int64_t b, int *bad) {
    int64_t r; if (__builtin_mul_overflow(a, b, &r)) *bad = 1; return r; }
static int64_t sz_floordiv(int64_t a, int64_t b, int *bad) {
    if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
    int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static int64_t sz_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t sz_max(int64_t a, int64_t b) { return a > b ? a : b; }
"""


def c_size(d: Dim, index: dict[str, int]) -> str:
    """`d` as a C expression over `d[...]` (symbols by their index), `bad` set on overflow."""
    if isinstance(d, int):
        return f"INT64_C({d})"
    total = None
    for monomial, coefficient in d.terms.items():
        term = f"INT64_C({coefficient})"
        for atom in monomial:
            term = f"sz_mul({term}, {_atom(atom, index)}, &bad)"
        total = term if total is None else f"sz_add({total}, {term}, &bad)"
    return total or "INT64_C(0)"


def _atom(atom: str | SizeFn, index: dict[str, int]) -> str:
    if isinstance(atom, str):
        return f"d[{index[atom]}]"
    args = [c_size(a, index) for a in atom.args]
    if atom.fn == "floordiv":
        return f"sz_floordiv({args[0]}, {args[1]}, &bad)"
    out = args[0]
    for a in args[1:]:
        out = f"sz_{atom.fn}({out}, {a})"
    return out


def _plain(d: Dim) -> str | None:
    if isinstance(d, SymDim) and len(d.terms) == 1:
        ((monomial, coefficient),) = d.terms.items()
        if coefficient == 1 and len(monomial) == 1 and isinstance(monomial[0], str):
            return monomial[0]
    return None


def _c(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)


def sizes_source(signature, inputs: Sequence, outputs: Sequence, limit: int) -> str:
    """The C functions above for a SymbolicSignature and the model's tensor specs;
    `limit`: the most bytes the dynamic arena or one output may take."""
    index = {s: i for i, s in enumerate(signature.symbols)}
    bind = ["int32_t onnxc_bind(const int64_t *const *shape, int64_t *d, char *msg, size_t n) {",
            "    int bad = 0;", "    int64_t v;", "    (void)v;",
            f"    for (int i = 0; i < {max(1, len(index))}; i++) d[i] = -1;"]
    derived = []
    for i, spec in enumerate(inputs):
        bind.append(f"    if (shape[{i}] == NULL) {{ snprintf(msg, n, \"input {i} "
                    f"('%s') has no shape\", {_c(spec.name)}); return -3; }}")
        for axis, text in enumerate(spec.shape):
            at = f"shape[{i}][{axis}]"
            where = f"input '{spec.name}' dimension {axis}"
            bind.append(f"    if ({at} < 0) {{ snprintf(msg, n, \"%s is %lld\", {_c(where)}, "
                        f"(long long){at}); return -3; }}")
            d = text if isinstance(text, int) else parse_dim(text)
            name = _plain(d)
            if isinstance(d, int):
                bind.append(f"    if ({at} != {d}) {{ snprintf(msg, n, \"%s is %lld, expected "
                            f"{d}\", {_c(where)}, (long long){at}); return -3; }}")
            elif name is not None:
                k = index[name]
                bind.append(f"    if (d[{k}] >= 0 && d[{k}] != {at}) {{ snprintf(msg, n, "
                            f"\"%s is %lld, but another input gives '%s' = %lld\", "
                            f"{_c(where)}, (long long){at}, {_c(name)}, (long long)d[{k}]); "
                            f"return -3; }}")
                bind.append(f"    d[{k}] = {at};")
            else:
                derived.append((at, where, d))
    for at, where, d in derived:
        bind.append(f"    v = {c_size(d, index)};")
        bind.append(f"    if (!bad && v != {at}) {{ snprintf(msg, n, \"%s is %lld, expected "
                    f"{d} = %lld\", {_c(where)}, (long long){at}, (long long)v); return -3; }}")
    for name, bound in zip(signature.run_symbols, signature.run_bounds):
        bind.append(f"    d[{index[name]}] = sz_max(0, {c_size(parse_dim(bound), index)});")
    bind += [("    if (bad) { snprintf(msg, n, \"the input shapes give sizes past 2^63\"); "
             "return -3; }"), "    return 0;", "}"]

    arena = ["int32_t onnxc_dynamic_bytes(const int64_t *d, int64_t *bytes) {",
             "    int bad = 0;", "    int64_t total = 0, s;", "    (void)d; (void)s;"]
    for text in signature.dynamic_slots:
        arena.append(f"    s = sz_max(0, {c_size(parse_dim(text), index)});")
        arena.append("    total = sz_add(total, sz_mul(sz_floordiv(sz_add(s, 63, &bad), 64, &bad),"
                     " 64, &bad), &bad);")
    arena += [f"    if (bad || total > INT64_C({limit})) return -5;",
              "    *bytes = total;", "    return 0;", "}"]

    out = ["int32_t onnxc_output_dims(const int64_t *d, int room, int64_t *const *shape) {",
           "    int bad = 0;", "    int64_t bytes;", "    (void)d; (void)room;"]
    for i, spec in enumerate(outputs):
        itemsize = spec.dtype.itemsize
        out.append(f"    bytes = {itemsize};")
        for axis, text in enumerate(spec.shape):
            d = text if isinstance(text, int) else parse_dim(text)
            upper = monotone_upper(d, signature.run_symbols) if signature.run_symbols else d
            exact, roomy = c_size(d, index), c_size(upper, index)
            value = exact if exact == roomy else f"(room ? {roomy} : {exact})"
            out.append(f"    shape[{i}][{axis}] = sz_max(0, {value});")
            out.append(f"    bytes = sz_mul(bytes, shape[{i}][{axis}], &bad);")
        out.append(f"    if (bad || bytes > INT64_C({limit})) return -5;")
    out += ["    return 0;", "}"]

    ranks = [str(len(s.shape)) for s in inputs]
    header = ["#include <stdio.h>", "#include <stddef.h>",
              f"const int64_t onnxc_num_symbols = {len(index)};",
              f"const int64_t onnxc_input_ranks[] = {{{', '.join(ranks) or '0'}}};",
              (f"const int64_t onnxc_output_ranks[] = "
              f"{{{', '.join(str(len(s.shape)) for s in outputs) or '0'}}};")]
    return "\n".join([*header, _HELPERS, *bind, "", *arena, "", *out, ""])
