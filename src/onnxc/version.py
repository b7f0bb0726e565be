"""onnxc's version: its own module so that any layer may read it without importing the API."""

__version__ = "0.1.0"
