"""Activation epilogues of graph.conv, graph.gemm and graph.matmul (row `fuse-activation`).

An epilogue is the activation applied to each output element right after the producing
kernel computed it, so the activation costs no extra pass over memory. It is three
optional properties of the producing op:
- `activation`: one of ACTIVATIONS;
- `activation_alpha`, `activation_beta`: its parameters, as ONNX names them:
  clip -> [alpha, beta] = [min, max] (either may be absent = unbounded),
  leaky_relu -> alpha (required), hard_swish -> x * clip(alpha * x + beta, 0, 1) (both
  required); relu, sigmoid, tanh, gelu (erf form) and gelu_tanh take none.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, StringAttr
from xdsl.irdl import opt_prop_def
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import activations

ACTIVATIONS: dict[str, tuple[set[str], set[str]]] = {
    name: (set(a.required), set(a.allowed)) for name, a in activations.ACTIVATIONS.items()}
"""name: (required parameters, allowed parameters), from dialects/activations.py."""

PARAMETERS = ("activation_alpha", "activation_beta")


class EpilogueProps:
    """Mixin adding the optional epilogue properties to a graph op definition."""

    activation = opt_prop_def(StringAttr)
    activation_alpha = opt_prop_def(FloatAttr)
    activation_beta = opt_prop_def(FloatAttr)


def epilogue_of(op) -> tuple[str, float | None, float | None] | None:
    """(activation, alpha, beta) of `op`'s epilogue, or None when it has none."""
    act = op.properties.get("activation")
    if act is None:
        return None
    alpha = op.properties.get("activation_alpha")
    beta = op.properties.get("activation_beta")
    return (
        act.data,
        None if alpha is None else alpha.value.data,
        None if beta is None else beta.value.data,
    )


def verify_epilogue(op, properties: dict | None = None, what: str = "") -> None:
    """The activation is known and carries exactly the parameters it takes; `properties`
    (default: the op's) under graph.conv's names, `what` naming whose epilogue they are."""
    properties = op.properties if properties is None else properties
    params = {p for p in PARAMETERS if p in properties}
    act = properties.get("activation")
    if act is None:
        if params:
            article = f"a {what}" if what else "an "
            raise VerifyException(f"{op.name}: {sorted(params)} given without "
                                  f"{article}activation")
        return
    if act.data not in ACTIVATIONS:
        raise VerifyException(
            f"{op.name}: unknown {what}activation '{act.data}' (expected one of "
            f"{sorted(ACTIVATIONS)})"
        )
    required, allowed = ACTIVATIONS[act.data]
    if not required <= params or not params <= allowed:
        raise VerifyException(
            f"{op.name}: activation '{act.data}' takes {sorted(allowed) or 'no parameters'}"
            f" (required {sorted(required) or 'none'}), got {sorted(params)}"
        )
