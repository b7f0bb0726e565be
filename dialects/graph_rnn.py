"""Recurrent layers of the graph dialect: `graph.lstm_recurrence`, `graph.gru_recurrence` and
`graph.rnn_recurrence`.

ONNX's LSTM, GRU and RNN are split by the importer into two parts: the input projection of
every time step, X W^T + Wb (+ Rb where it commutes), which is one GEMM (`graph.gemm`, the
packed kernel), and the recurrence these ops describe, which takes those projected `gates`
and the recurrence weights R. Keeping the GEMM outside lets it use the fast GEMM kernel and
leaves the recurrence kernel with the sequential part only.

Shapes (D directions, S steps, B batch, H hidden, G gates: 4 LSTM, 3 GRU, 1 RNN):
  gates            [S, B, D, G*H]   (layout = 1: [B, S, D, G*H])
  recurrence (R)   [D, G*H, H]      in ONNX gate order (LSTM i o f c, GRU z r h)
  recurrence_bias  [D, H]           GRU with linear_before_reset only: Rbh
  sequence_lens    [B]              integer
  initial_h/_c     [D, B, H]        (layout = 1: [B, D, H])
  peepholes        [D, 3H]          LSTM only: P i o f
  y                [S, D, B, H]     (layout = 1: [B, S, D, H])
  y_h, y_c         like initial_h
`activations` lists the per-direction activation names (3 for LSTM, 2 for GRU, 1 for RNN, per
direction; dialects/activations.py GATE_ACTIVATIONS) with one resolved alpha and beta each
(the ONNX defaults already applied).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)

from onnxc.dialects.activations import GATE_ACTIVATIONS
from onnxc.dialects.graph_base import GraphOp, int_of, shape_of
from onnxc.dialects.graph_traits import StaticSizesKernel

DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}

_OPTIONAL = (
    "(`recurrence_bias` $recurrence_bias^ `:` type($recurrence_bias))? "
    "(`sequence_lens` $sequence_lens^ `:` type($sequence_lens))? "
    "(`initial_h` $initial_h^ `:` type($initial_h))? "
)
_FORMAT_HEAD = "`(` $gates `,` $recurrence `)` "
_FORMAT_TAIL = "attr-dict `:` type($gates) `,` type($recurrence) `->` type(results)"


class RecurrenceOp(GraphOp):
    """What the three recurrences share: shapes, directions and activations."""

    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    traits = traits_def(StaticSizesKernel())
    GATES: ClassVar[int] = 1
    ACTIVATIONS_PER_DIRECTION: ClassVar[int] = 1

    # Each op declares its own operands and results, in its order (IRDL orders inherited
    # fields after a subclass's own): gates, recurrence, sequence_lens, initial_h, y, y_h
    # at least.
    direction = prop_def(StringAttr)
    activations = prop_def(ArrayAttr[StringAttr])
    activation_alpha = prop_def(DenseArrayBase)
    activation_beta = prop_def(DenseArrayBase)
    clip = opt_prop_def(FloatAttr)
    layout = prop_def(IntegerAttr)

    # ---------------------------------------------------------------- accessors

    def directions(self) -> int:
        return shape_of(self.recurrence)[0]

    def hidden(self) -> int:
        return shape_of(self.recurrence)[2]

    def steps_and_batch(self) -> tuple[int, int]:
        g = shape_of(self.gates)
        return (g[1], g[0]) if int_of(self.layout) else (g[0], g[1])

    def activation_list(self) -> list[tuple[str, float, float]]:
        """(name, alpha, beta) of every activation, direction-major."""
        alphas = [float(a) for a in self.activation_alpha.get_values()]
        betas = [float(b) for b in self.activation_beta.get_values()]
        return [(a.data, alphas[i], betas[i]) for i, a in enumerate(self.activations.data)]

    def is_reverse(self, d: int) -> bool:
        return self.direction.data == "reverse" or (self.direction.data == "bidirectional"
                                                     and d == 1)

    def state_shape(self) -> tuple[int, ...]:
        _, b = self.steps_and_batch()
        d, h = self.directions(), self.hidden()
        return (b, d, h) if int_of(self.layout) else (d, b, h)

    def same_element_type_operands(self) -> Sequence[SSAValue]:
        return [v for v in self.operands if v is not self.sequence_lens]

    # ---------------------------------------------------------------- verification

    def check_state(self, name: str, value: SSAValue | None) -> None:
        if value is not None and shape_of(value) != self.state_shape():
            raise ValueError(f"{name} {shape_of(value)} differs from {self.state_shape()}")

    def infer_shapes(self):
        r, g = shape_of(self.recurrence), shape_of(self.gates)
        if len(r) != 3 or r[1] != self.GATES * r[2]:
            raise ValueError(f"recurrence {r} is not [directions, {self.GATES} * hidden, hidden]")
        if self.direction.data not in DIRECTIONS:
            raise ValueError(f"unknown direction '{self.direction.data}'")
        d, h = r[0], r[2]
        if d != DIRECTIONS[self.direction.data]:
            raise ValueError(f"{d} directions do not fit direction '{self.direction.data}'")
        layout = int_of(self.layout)
        if layout not in (0, 1):
            raise ValueError(f"layout must be 0 or 1, not {layout}")
        if len(g) != 4 or g[2] != d or g[3] != self.GATES * h:
            raise ValueError(f"gates {g} do not fit recurrence {r}")
        self.check_activations(d)
        s, b = self.steps_and_batch()
        if self.sequence_lens is not None:
            lens = self.sequence_lens.type
            if shape_of(lens) != (b,) or not isinstance(lens.get_element_type(), IntegerType):
                raise ValueError(f"sequence_lens {shape_of(lens)} must be [{b}] integers")
        self.check_state("initial_h", self.initial_h)
        self.check_extra(d, h)
        y = (b, s, d, h) if layout else (s, d, b, h)
        return [y] + [self.state_shape()] * (len(self.results) - 1)

    def check_activations(self, d: int) -> None:
        names = [a.data for a in self.activations.data]
        if len(names) != self.ACTIVATIONS_PER_DIRECTION * d:
            raise ValueError(f"{len(names)} activations, expected "
                             f"{self.ACTIVATIONS_PER_DIRECTION * d}")
        for name in names:
            if name not in GATE_ACTIVATIONS:
                raise ValueError(f"unknown activation '{name}'")
        for what, attr in (("activation_alpha", self.activation_alpha),
                           ("activation_beta", self.activation_beta)):
            if len(attr.get_values()) != len(names):
                raise ValueError(f"{what} needs one value per activation ({len(names)})")
        if self.clip is not None and not self.clip.value.data >= 0:
            raise ValueError(f"clip must be non-negative, not {self.clip.value.data}")

    def check_extra(self, d: int, h: int) -> None:
        """Checks of the operands only one kind of recurrence has."""

    def operand_map(self, values: Sequence[SSAValue]) -> dict[str, SSAValue]:
        """`values` (one per operand, e.g. a kernel's buffers) by operand name, absent
        optional operands left out."""
        sizes = [int(v) for v in self.properties["operandSegmentSizes"].get_values()]
        names = [name for name, _ in self.get_irdl_definition().operands]
        out, at = {}, 0
        for name, size in zip(names, sizes, strict=True):
            if size:
                out[name] = values[at]
            at += size
        return out


@irdl_op_definition
class LSTMRecurrenceOp(RecurrenceOp):
    """LSTM: i, o, f = f(.), c~ = g(.), C = f C + i c~, H = o h(C); optional peepholes,
    input_forget couples f = 1 - i."""

    name = "graph.lstm_recurrence"
    GATES: ClassVar[int] = 4
    ACTIVATIONS_PER_DIRECTION: ClassVar[int] = 3
    assembly_format = (_FORMAT_HEAD + "(`sequence_lens` $sequence_lens^ `:` type($sequence_lens))? "
                       "(`initial_h` $initial_h^ `:` type($initial_h))? "
                       "(`initial_c` $initial_c^ `:` type($initial_c))? "
                       "(`peepholes` $peepholes^ `:` type($peepholes))? " + _FORMAT_TAIL)

    gates = operand_def(TensorType)
    recurrence = operand_def(TensorType)
    sequence_lens = opt_operand_def(TensorType)
    initial_h = opt_operand_def(TensorType)
    initial_c = opt_operand_def(TensorType)
    peepholes = opt_operand_def(TensorType)
    y = result_def(TensorType)
    y_h = result_def(TensorType)
    y_c = result_def(TensorType)
    input_forget = prop_def(IntegerAttr)

    def check_extra(self, d: int, h: int) -> None:
        self.check_state("initial_c", self.initial_c)
        if self.peepholes is not None and shape_of(self.peepholes) != (d, 3 * h):
            raise ValueError(f"peepholes {shape_of(self.peepholes)} differ from {(d, 3 * h)}")


@irdl_op_definition
class GRURecurrenceOp(RecurrenceOp):
    """GRU: z, r = f(.), h~ = g(.), H = (1 - z) h~ + z H; `recurrence_bias` (Rbh) is
    present exactly when linear_before_reset is set (r then scales H Rh^T + Rbh)."""

    name = "graph.gru_recurrence"
    GATES: ClassVar[int] = 3
    ACTIVATIONS_PER_DIRECTION: ClassVar[int] = 2
    assembly_format = _FORMAT_HEAD + _OPTIONAL + _FORMAT_TAIL

    gates = operand_def(TensorType)
    recurrence = operand_def(TensorType)
    recurrence_bias = opt_operand_def(TensorType)
    sequence_lens = opt_operand_def(TensorType)
    initial_h = opt_operand_def(TensorType)
    y = result_def(TensorType)
    y_h = result_def(TensorType)
    linear_before_reset = prop_def(IntegerAttr)

    def check_extra(self, d: int, h: int) -> None:
        if int_of(self.linear_before_reset) not in (0, 1):
            raise ValueError("linear_before_reset must be 0 or 1")
        if (self.recurrence_bias is not None) != bool(int_of(self.linear_before_reset)):
            raise ValueError("recurrence_bias goes with linear_before_reset = 1 only")
        if self.recurrence_bias is not None and shape_of(self.recurrence_bias) != (d, h):
            raise ValueError(f"recurrence_bias {shape_of(self.recurrence_bias)} differs "
                             f"from {(d, h)}")


@irdl_op_definition
class RNNRecurrenceOp(RecurrenceOp):
    """Simple RNN: H = f(x + H R^T)."""

    name = "graph.rnn_recurrence"
    assembly_format = (_FORMAT_HEAD + "(`sequence_lens` $sequence_lens^ `:` type($sequence_lens))? "
                       "(`initial_h` $initial_h^ `:` type($initial_h))? " + _FORMAT_TAIL)

    gates = operand_def(TensorType)
    recurrence = operand_def(TensorType)
    sequence_lens = opt_operand_def(TensorType)
    initial_h = opt_operand_def(TensorType)
    y = result_def(TensorType)
    y_h = result_def(TensorType)


RNN_OPS = [LSTMRecurrenceOp, GRURecurrenceOp, RNNRecurrenceOp]

__all__ = ["RNN_OPS", "GRURecurrenceOp", "LSTMRecurrenceOp", "RNNRecurrenceOp",
           "RecurrenceOp"]
