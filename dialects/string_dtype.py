"""The native form of a string element (docs/strings.md), without xDSL: the runtime reads it
when it loads a compiled model, which imports neither onnx nor xDSL."""

from __future__ import annotations

import numpy as np

STRING_BYTES = 16
"""bytes of one string element: a pointer to its UTF-8 bytes and their length, 64-bit each"""

STRING_DTYPE = np.dtype([("ptr", "<u8"), ("len", "<u8")], align=True)
"""the numpy dtype of native string elements (the runtime builds them from numpy arrays of
str and reads them back: runtime/strings.py); never a dtype a user sees"""

HIDDEN_PREFIX = "onnxc.string_bytes."
"""The name of an entry output holding the bytes of strings a kernel made (a case change, a
concatenation): the importer returns them (frontend/onnx_ops_strings.made_bytes), the run
allocates them like any output of run-time length, string outputs may point into them, and
the caller never sees them (runtime/strings.py)."""
