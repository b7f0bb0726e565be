"""Index arithmetic folded while it is emitted: each `index` value as a sum of terms.

Why: the kernels compute every address from scratch, e.g. `((row + (i + 1) * 2) * 144 + c)`
for each of 72 unrolled taps, so index arithmetic was 60% of ResNet-50's LLVM IR (5,300 adds
and 3,400 muls against 1,900 FMAs and loads). LLVM folded it back, at the cost of
instcombine and SCEV time, and llvmlite took about 40 us to build and print each
instruction. Here `arith.addi`/`subi`/`muli` on `index` values only combine *forms*
(`sum(coefficient * value) + constant` over values that are not themselves such sums), and
a form becomes instructions when something else uses it: once per block for its variable
part, plus one add for its constant. The 72 taps then cost one add each.

The folding is exact: `index` is i64, and sums and products of i64 are associative and
distributive modulo 2^64, which Python's integers reproduce when constants are wrapped to
64 bits. The instructions carry no `nsw` flags (the arith ops had none, and a reassociated
sum may not keep them). memref addresses go through the same forms.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

I64 = ir.IntType(64)


def wrap64(value: int) -> int:
    """`value` as the signed 64-bit integer it is modulo 2^64."""
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


@dataclass(frozen=True, slots=True)
class IndexForm:
    """`sum(coefficient * atom) + constant`; `terms` are (atom number, coefficient) in
    atom order, so equal sums have equal keys."""

    terms: tuple[tuple[int, int], ...]
    constant: int

    def plus(self, other: IndexForm, sign: int = 1) -> IndexForm:
        if not other.terms and not other.constant:
            return self
        if not self.terms and not self.constant and sign == 1:
            return other
        coefficients = dict(self.terms)
        for atom, coefficient in other.terms:
            total = wrap64(coefficients.get(atom, 0) + sign * coefficient)
            if total:
                coefficients[atom] = total
            else:
                coefficients.pop(atom, None)
        return IndexForm(tuple(sorted(coefficients.items())),
                         wrap64(self.constant + sign * other.constant))

    def times(self, factor: int) -> IndexForm:
        if factor == 1:
            return self
        if factor == 0:
            return IndexForm((), 0)
        return IndexForm(tuple([(a, wrap64(c * factor)) for a, c in self.terms]),
                         wrap64(self.constant * factor))

    @property
    def is_constant(self) -> bool:
        return not self.terms


class IndexForms:
    """One function's forms: which llvmlite value each atom number stands for, and the
    instructions already built for a form in a block (valid for the rest of that block)."""

    def __init__(self) -> None:
        self.atoms: list[ir.Value] = []
        self._numbers: dict[int, int] = {}  # id(llvmlite value) -> atom number
        self._built: dict[tuple[int, object], ir.Value] = {}

    def of_value(self, value: ir.Value) -> IndexForm:
        """The form of a value that is not a sum (a loop counter, an argument, a load)."""
        if isinstance(value, ir.Constant) and isinstance(value.constant, int):
            return IndexForm((), wrap64(value.constant))
        number = self._numbers.get(id(value))
        if number is None:
            number = self._numbers[id(value)] = len(self.atoms)
            self.atoms.append(value)
        return IndexForm(((number, 1),), 0)

    def as_value(self, form: IndexForm) -> ir.Value | None:
        """The value a form is without any instruction (a constant or a bare atom)."""
        if not form.terms:
            return I64(form.constant)
        if form.constant == 0 and len(form.terms) == 1 and form.terms[0][1] == 1:
            return self.atoms[form.terms[0][0]]
        return None

    def build(self, form: IndexForm, builder: ir.IRBuilder) -> ir.Value:
        """`form` as an i64 value at the builder's position, reusing what this block built."""
        plain = self.as_value(form)
        if plain is not None:
            return plain
        variable = self._variable_part(form.terms, builder)
        if form.constant == 0:
            return variable
        return self._memo(("+", form.terms, form.constant), builder,
                          lambda: builder.add(variable, I64(form.constant)))

    def _variable_part(self, terms: tuple[tuple[int, int], ...],
                       builder: ir.IRBuilder) -> ir.Value:
        if len(terms) == 1 and terms[0][1] == 1:
            return self.atoms[terms[0][0]]

        def emit() -> ir.Value:
            total: ir.Value | None = None
            for atom, coefficient in terms:
                term = self.atoms[atom]
                if coefficient != 1:
                    term = self._memo(("*", atom, coefficient), builder,
                                      lambda t=term, c=coefficient: builder.mul(t, I64(c)))
                total = term if total is None else builder.add(total, term)
            assert total is not None
            return total
        return self._memo(("sum", terms), builder, emit)

    def _memo(self, key: object, builder: ir.IRBuilder, emit) -> ir.Value:  # type: ignore[no-untyped-def]
        full = (id(builder.block), key)
        found = self._built.get(full)
        if found is None:
            found = self._built[full] = emit()
        return found


__all__ = ["IndexForm", "IndexForms", "wrap64"]
