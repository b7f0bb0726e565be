"""onnxc's dialects. Importing the package makes the declarative assembly formats of the
dialects onnxc loads parse on first use (lazy_assembly_formats.py: 0.13 s per process)."""

from onnxc.dialects import lazy_assembly_formats

lazy_assembly_formats.install()
