"""The IR printer of `onnxc-opt`: xDSL's, plus MLIR's `--mlir-elide-elementsattrs-if-larger`.

A model's weights are dense constants: printed in full, a 5 MB model is 10 MB of hex that
hides the graph a user wants to read. MLIR prints a constant with more elements than the limit
as `dense_resource<__elided__> : tensor<...>`, which keeps the type and drops the data; the
output still parses (as a resource without a blob), but no longer computes the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Attribute
from xdsl.printer import Printer

ELIDED_HANDLE = "__elided__"


@dataclass(eq=False, repr=False)
class ElidingPrinter(Printer):
    """A Printer that elides dense elements attributes with more than `elide_larger` elements
    (None: print everything)."""

    elide_larger: int | None = None

    def print_attribute(self, attribute: Attribute) -> None:
        if (self.elide_larger is not None and isinstance(attribute, DenseIntOrFPElementsAttr)
                and len(attribute) > self.elide_larger):
            self.print_string(f"dense_resource<{ELIDED_HANDLE}> : ")
            super().print_attribute(attribute.get_type())
            return
        super().print_attribute(attribute)


def module_text(module: ModuleOp, *, generic: bool = False, debuginfo: bool = False,
                elide_larger: int | None = None, properties_as_attributes: bool = False) -> str:
    """`module` as MLIR text, as the `mlir` target prints it (followed by a blank line)."""
    out = StringIO()
    printer = ElidingPrinter(stream=out, print_generic_format=generic,
                             print_debuginfo=debuginfo, elide_larger=elide_larger,
                             print_properties_as_attributes=properties_as_attributes)
    printer.print_op(module)
    return out.getvalue()


__all__ = ["ELIDED_HANDLE", "ElidingPrinter", "module_text"]
