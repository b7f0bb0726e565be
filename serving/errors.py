"""The one error type a serving request can end in, with its protocol status.

Every refusal (a wrong name, shape, dtype or byte size, a malformed body, a full queue, a model
that is not loaded) is a ServingError; the HTTP front end answers `http_status` with
`{"error": message}` and the gRPC one aborts with `grpc_code`. Anything else escaping a
handler is a bug, reported as INTERNAL without taking the server down.
"""

from __future__ import annotations

from onnxc.errors import OnnxcError

# Open Inference Protocol status -> (HTTP status, gRPC status code name)
_STATUSES = {
    "INVALID_ARGUMENT": (400, "INVALID_ARGUMENT"),
    "NOT_FOUND": (400, "NOT_FOUND"),  # Triton answers an unknown model with 400, not 404
    "UNAVAILABLE": (503, "UNAVAILABLE"),
    "INTERNAL": (500, "INTERNAL"),
}


class ServingError(OnnxcError):
    """A request the server refuses, with the reason a client can act on."""

    def __init__(self, status: str, message: str):
        if status not in _STATUSES:
            raise ValueError(f"unknown serving status {status!r}")
        self.status = status
        self.message = message
        super().__init__(message)

    @property
    def http_status(self) -> int:
        return _STATUSES[self.status][0]

    @property
    def grpc_code(self) -> str:
        """The name of a `grpc.StatusCode` member."""
        return _STATUSES[self.status][1]

    @classmethod
    def invalid(cls, message: str) -> ServingError:
        return cls("INVALID_ARGUMENT", message)

    @classmethod
    def not_found(cls, message: str) -> ServingError:
        return cls("NOT_FOUND", message)

    @classmethod
    def unavailable(cls, message: str) -> ServingError:
        return cls("UNAVAILABLE", message)
