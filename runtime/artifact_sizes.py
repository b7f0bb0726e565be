"""The sizes of an artifact's shaped C API, generated as C for its layout.c.

In Python, runtime/symbolic_shapes.py binds each size symbol from the input arrays, checks
that the inputs agree and sizes the dynamic arena and the outputs from the compiler's
polynomials. A deployed library has no Python, so the same computations are written here as
C that runtime/c/onnxc_model.c calls (`d` is the entry's `dims` buffer, entry_abi.py):

    int32_t onnxc_bind(const int64_t *const *input_shapes, const int64_t *capacities,
                       int64_t *d, char *msg, size_t n)
    int32_t onnxc_dynamic_bytes(const int64_t *d, int64_t *bytes)
    int32_t onnxc_output_dims(const int64_t *d, int room, int64_t *const *shapes)

The shapes come from the caller, so every size is evaluated with overflow checks and floor
division as symbolic_dims.py defines it: a bad shape is a status with a message, never a
wrong allocation. A run symbol starts at its bound, or at the library's capacity for it
(which onnxc_model.c grows); `room`: the outputs' shapes for those (monotone_upper). Static
models get the same functions, and one compiled per sample binds the samples as `d[0]`.
"""

from __future__ import annotations

from onnxc.dialects.size_substitution import monotone_upper
from onnxc.dialects.size_text import parse_dim
from onnxc.dialects.symbolic_dims import Dim, SizeFn, SymDim
from onnxc.runtime.model_abi import parse_symbolic
from onnxc.runtime.dtypes import dtype_named
from onnxc.runtime.symbolic_shapes import INITIAL_CAPACITY

SITE_KINDS = {"capacity": 2, "size": 1}
"""How onnxc_model.c reports a failed check site (0: a value at a position)."""

_HELPERS = r"""
#define SZ static inline __attribute__((unused)) int64_t
SZ sz_add(int64_t a, int64_t b, int *bad) {
    int64_t r; if (__builtin_add_overflow(a, b, &r)) *bad = 1; return r; }
SZ sz_mul(int64_t a, int64_t b, int *bad) {
    int64_t r; if (__builtin_mul_overflow(a, b, &r)) *bad = 1; return r; }
SZ sz_floordiv(int64_t a, int64_t b, int *bad) {
    if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
    int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
SZ sz_min(int64_t a, int64_t b) { return a < b ? a : b; }
SZ sz_max(int64_t a, int64_t b) { return a > b ? a : b; }
"""


def c_size(d: Dim, index: dict[str, int]) -> str:
    """`d` as a C expression over `d[...]` (symbols by their index), `bad` set on overflow."""
    if isinstance(d, int):
        return f"INT64_C({d})"
    total = None
    for monomial, coefficient in d.terms.items():
        atoms = [_atom(atom, index) for atom in monomial]
        term = atoms.pop(0) if coefficient == 1 and atoms else f"INT64_C({coefficient})"
        for atom in atoms:
            term = f"sz_mul({term}, {atom}, &bad)"
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


def c_string(text: str) -> str:
    """`text` as a C string literal: printable ASCII as is, anything else as octal escapes
    of its UTF-8 bytes (names come from the model file)."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        char = chr(byte)
        if char in '"\\?' or not 32 <= byte < 127:
            out.append(f"\\{byte:03o}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _esc(name: str) -> str:
    """A name as it may stand in a printf format."""
    return name.replace("%", "%%")


_c = c_string


def _array(declaration: str, items) -> str:
    """`<declaration>[] = {items};` (one 0 when empty: C has no empty initializers)."""
    return f"{declaration}[] = {{{', '.join(map(str, items)) or '0'}}};"


def _fail(message: str, *args: str) -> str:
    extra = "".join(f", {a}" for a in args)
    return f"{{ snprintf(msg, n, {_c(message)}{extra}); return -3; }}"


def _dims(shape: list) -> list[Dim]:
    return [d if isinstance(d, int) else parse_dim(d) for d in shape]


def _bind(manifest: dict, signature, index: dict[str, int], rows_in: list[int]) -> list[str]:
    """onnxc_bind: each symbol from the shapes, every fixed and shared dimension checked."""
    lines = ["int32_t onnxc_bind(const int64_t *const *shape, const int64_t *caps, int64_t *d,",
             "                   char *msg, size_t n) {",
             "    int bad = 0;", "    int64_t v, bytes = 0;", "    (void)v; (void)caps; (void)bytes;",
             f"    for (int i = 0; i < {max(1, len(index))}; i++) d[i] = -1;"]
    derived = []
    for i, (name, shape, dtype) in enumerate(manifest["inputs"]):
        where = f"input '{_esc(name)}' dimension %d"
        lines.append(f"    if (shape[{i}] == NULL) "
                     + _fail(f"input {i} ('%s') has no shape", _c(name)))
        lines.append(f"    for (int k = 0; k < {len(shape)}; k++) if (shape[{i}][k] < 0) "
                     + _fail(f"{where} is %lld: a dimension is at least 0", "k",
                             f"(long long)shape[{i}][k]"))
        lines.append(f"    bytes = {dtype_named(dtype).itemsize};")
        for axis, d in enumerate(_dims(shape)):
            at, here = f"shape[{i}][{axis}]", where.replace("%d", str(axis))
            lines.append(f"    bytes = sz_mul(bytes, {at}, &bad);")
            if rows_in[i] and axis == 0:  # a model run per sample: rows_in[i] rows each
                k = rows_in[i]
                lines.append(f"    if ({at} % {k}) " + _fail(
                    f"{here} is %lld: not a whole number of samples ({k} row(s) each)",
                    f"(long long){at}"))
                lines.append(f"    if (d[0] >= 0 && d[0] != {at} / {k}) " + _fail(
                    f"input '{_esc(name)}' holds %lld sample(s), another input %lld",
                    f"(long long)({at} / {k})", "(long long)d[0]"))
                lines.append(f"    d[0] = {at} / {k};")
                continue
            symbol = _plain(d)
            if isinstance(d, int):
                lines.append(f"    if ({at} != {d}) " + _fail(
                    f"{here} is %lld, expected {d} (the model fixes it)", f"(long long){at}"))
            elif symbol is not None:
                s = index[symbol]
                lines.append(f"    if (d[{s}] >= 0 && d[{s}] != {at}) " + _fail(
                    f"{here} ('{symbol}') is %lld, but another input gives '{symbol}' = %lld",
                    f"(long long){at}", f"(long long)d[{s}]"))
                lines.append(f"    d[{s}] = {at};")
            else:
                derived.append((at, here, d))
        lines.append("    if (bad) " + _fail(f"input '{_esc(name)}': its shape is past 2^63 bytes"))
    if signature is not None:
        given = [s for s in signature.symbols if s not in signature.run_symbols]
        for symbol in given:
            lines.append(f"    if (d[{index[symbol]}] < 0) "
                         + _fail(f"no input gives the size of '{symbol}'"))
        for at, here, d in derived:
            lines.append(f"    v = {c_size(d, index)};")
            lines.append(f"    if (!bad && v != {at}) " + _fail(
                f"{here} is %lld, expected {d} = %lld", f"(long long){at}", "(long long)v"))
        for j, (name, bound) in enumerate(zip(signature.run_symbols, signature.run_bounds)):
            value = f"sz_max(0, {c_size(parse_dim(bound), index)})" if bound else f"caps[{j}]"
            lines.append(f"    d[{index[name]}] = {value};")
    lines += ["    if (bad) " + _fail("the input shapes give a size past 2^63 (or divide by 0)"),
              "    return 0;", "}"]
    return lines


def _dynamic(signature, index: dict[str, int], limit: int) -> list[str]:
    lines = ["int32_t onnxc_dynamic_bytes(const int64_t *d, int64_t *bytes) {",
             "    int bad = 0;", "    int64_t total = 0, s;", "    (void)d; (void)s;"]
    for text in signature.dynamic_slots if signature is not None else ():
        lines.append(f"    s = sz_max(0, {c_size(parse_dim(text), index)});")
        lines.append("    total = sz_add(total, sz_mul(sz_floordiv(sz_add(s, 63, &bad), 64, &bad),"
                     " 64, &bad), &bad);")
    return lines + [f"    if (bad || total > INT64_C({limit})) return -5;",
                    "    *bytes = total;", "    return 0;", "}"]


def _outputs(manifest: dict, signature, index: dict[str, int], rows_out: list[int],
             limit: int) -> list[str]:
    """onnxc_output_dims: each output's shape (`room`: for the run symbols' capacities)."""
    run = signature.run_symbols if signature is not None else ()
    lines = ["int32_t onnxc_output_dims(const int64_t *d, int room, int64_t *const *shape) {",
             "    int bad = 0;", "    int64_t bytes;", "    (void)d; (void)room;"]
    for i, (_, shape, dtype) in enumerate(manifest["outputs"]):
        lines.append(f"    bytes = {dtype_named(dtype).itemsize};")
        for axis, d in enumerate(_dims(shape)):
            if rows_out[i] and axis == 0:
                value = f"sz_mul({rows_out[i]}, d[0], &bad)"
            else:
                upper = monotone_upper(d, run) if run else d
                exact, roomy = c_size(d, index), c_size(upper, index)
                value = exact if exact == roomy else f"(room ? {roomy} : {exact})"
            lines.append(f"    shape[{i}][{axis}] = sz_max(0, {value});")
            lines.append(f"    bytes = sz_mul(bytes, shape[{i}][{axis}], &bad);")
        lines.append(f"    if (bad || bytes > INT64_C({limit})) return -5;")
    return lines + ["    return 0;", "}"]


def sizes_source(manifest: dict, limit: int) -> str:
    """The C functions above and the tables onnxc_model.c reads for an artifact's manifest
    (runtime/artifact.py); `limit`: the most bytes the dynamic arena or one output may
    take."""
    signature = parse_symbolic(manifest.get("symbolic"))
    rows_in, rows_out = manifest.get("batch_rows") or [
        [0] * len(manifest["inputs"]), [0] * len(manifest["outputs"])]
    symbols = signature.symbols if signature is not None else (
        ("samples",) if any(rows_in) else ())
    index = {s: i for i, s in enumerate(symbols)}
    run = list(signature.run_symbols) if signature is not None else []
    bounds = list(signature.run_bounds) if signature is not None else []
    empty = -1 if signature is None or signature.separable_batch is None \
        else index[signature.separable_batch]
    no_batch = [name for name, shape, _ in manifest["outputs"]
                if all(isinstance(d, int) for d in shape)]
    refusal = (f"a run with no samples: output '{no_batch[0]}' does not have the batch "
               f"dimension; give at least one sample") if empty >= 0 and no_batch else ""
    sites = manifest["check_sites"]
    defaults = {row["name"]: row["shape"] for row in manifest["defaults"]}
    default_shapes = []
    lines = ["#include <stdio.h>", "#include <stddef.h>"]
    for i, (name, _, _) in enumerate(manifest["inputs"]):
        if name in defaults:
            lines.append(_array(f"static const int64_t onnxc_default_shape_{i}",
                                defaults[name]))
        default_shapes.append(f"onnxc_default_shape_{i}" if name in defaults else "NULL")

    def itemsizes(rows):
        return [dtype_named(dtype).itemsize for _, _, dtype in rows]

    def sample_bytes(rows, per):
        return [0 if not k else k * int(itemsize) * _product(shape[1:])
                for (_, shape, _), k, itemsize in zip(rows, per, itemsizes(rows))]

    lines += [
        f"const int64_t onnxc_num_symbols = {len(index)};",
        f"const int64_t onnxc_num_run_symbols = {len(run)};",
        f"const int64_t onnxc_first_run_symbol = {len(index) - len(run)};",
        _array("const int64_t onnxc_run_bounded", [1 if b else 0 for b in bounds]),
        _array("const char *const onnxc_run_names", [_c(s) for s in run]),
        _array("int64_t onnxc_capacities", [INITIAL_CAPACITY] * len(run)),
        _array("const int64_t onnxc_site_kind",
               [SITE_KINDS.get(str(site.get("kind")), 0) for site in sites]),
        _array("const int64_t onnxc_site_run_symbol",
               [run.index(site.get("operand")) if site.get("kind") == "capacity"
                and site.get("operand") in run else -1 for site in sites]),
        _array("const char *const onnxc_input_names", [_c(r[0]) for r in manifest["inputs"]]),
        _array("const char *const onnxc_output_names",
               [_c(r[0]) for r in manifest["outputs"]]),
        _array("const int64_t onnxc_input_ranks", [len(r[1]) for r in manifest["inputs"]]),
        _array("const int64_t onnxc_output_ranks", [len(r[1]) for r in manifest["outputs"]]),
        _array("const int64_t onnxc_input_itemsize", itemsizes(manifest["inputs"])),
        _array("const int64_t onnxc_output_itemsize", itemsizes(manifest["outputs"])),
        _array("const int64_t *const onnxc_default_shapes", default_shapes),
        f"const int64_t onnxc_per_sample = {1 if signature is None and any(rows_in) else 0};",
        _array("const int64_t onnxc_input_sample_bytes", sample_bytes(manifest["inputs"],
                                                                      rows_in)),
        _array("const int64_t onnxc_output_sample_bytes", sample_bytes(manifest["outputs"],
                                                                       rows_out)),
        f"const int64_t onnxc_empty_symbol = {empty};",
        f"const char onnxc_empty_refusal[] = {_c(refusal)};",
        _HELPERS,
        *_bind(manifest, signature, index, rows_in), "",
        *_dynamic(signature, index, limit), "",
        *_outputs(manifest, signature, index, rows_out, limit), ""]
    return "\n".join(lines)


def _product(dims) -> int:
    total = 1
    for d in dims:
        total *= int(d)
    return total


def shape_symbols(manifest: dict) -> list[dict]:
    """What the header and the manifest say of each size symbol: an input symbol's
    dimensions (input, axis), a run symbol's bound ("" when the run's capacity grows)."""
    signature = parse_symbolic(manifest.get("symbolic"))
    if signature is None:
        return []
    rows = []
    for symbol in signature.symbols:
        if symbol in signature.run_symbols:
            bound = signature.run_bounds[signature.run_symbols.index(symbol)]
            rows.append({"name": symbol, "kind": "run", "bound": bound})
            continue
        dims = [[name, axis] for name, shape, _ in manifest["inputs"]
                for axis, d in enumerate(shape) if d == symbol]
        rows.append({"name": symbol, "kind": "input", "dims": dims})
    return rows


__all__ = ["SITE_KINDS", "c_size", "c_string", "shape_symbols", "sizes_source"]
