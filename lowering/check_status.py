"""`return-check-status`: the entry function returns an i32 status, and stops at a failed check.

After `convert-graph-to-loops`, a run-time check is a call of a check kernel (marked with its
site, `onnxc.check_site = k`) that writes the run's status record. This pass, the last of the
entry-ABI passes (it needs the arena offsets of `plan-memory`), makes the entry return `i32`:

    func.call @check_indices_0(%i, %status) {onnxc.check_site = 0 : i64} : (...) -> ()
    func.call @gather_0(%x, %i, %y) : (...) -> ()
    func.return
  becomes
    func.call @check_indices_0(%i, %status) {onnxc.check_site = 0 : i64} : (...) -> ()
    %failed = memref.load %status[%c0] : memref<3xi64>
    %bad = arith.cmpi ne, %failed, %c0_i64 : i64
    cf.cond_br %bad, ^failed(%c1_i32 : i32), ^bb1
  ^bb1:
    func.call @gather_0(%x, %i, %y) : (...) -> ()
    func.return %c0_i32 : i32
  ^failed(%site: i32):
    func.return %site : i32

so nothing after a failed check runs: no kernel ever consumes data a check refused, and the
runtime raises instead of returning partial outputs. The status is 0 after a complete run,
k + 1 when check k failed; `onnxc.status_offset` tells the runtime where the record is in the
arena.

A Gather that checks its own indices (a fused check, `onnxc.check_fallback = "<kernel>"`)
only flags a failure; its failure branch first calls that check kernel on the indices to find
the first bad element, then returns:

  ^failed_1:
    func.call @check_indices_0(%i, %status) : (memref<2xi64>, memref<3xi64>) -> ()
    func.return %c1_i32 : i32
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects.entry_abi import (
    CHECK_FALLBACK_ATTR,
    CHECK_OPERANDS_ATTR,
    CHECK_SITE_ATTR,
    NESTED_CHECKS_ATTR,
    STATUS_OFFSET_ATTR,
    entry_function,
)
from onnxc.errors import LoweringError


def _arena_offset(status: SSAValue) -> int | None:
    """The byte offset of the status record in the arena, once plan-memory placed it."""
    view = status.owner
    if not isinstance(view, memref.ViewOp):
        return None
    shift = view.byte_shift.owner
    if isinstance(shift, arith.ConstantOp) and isinstance(shift.value, IntegerAttr):
        return shift.value.value.data
    return None


def _operand_positions(call: func.CallOp) -> tuple[int, int]:
    """(checked operand, status record) positions among `call`'s operands: given by
    `onnxc.check_operands` on a fused check, else the check kernel's (value, status)."""
    positions = call.attributes.get(CHECK_OPERANDS_ATTR)
    if isinstance(positions, ArrayAttr):
        checked, status = (p.value.data for p in positions.data)  # type: ignore[attr-defined]
        return checked, status
    return 0, len(call.operands) - 1


def _status_of(call: func.CallOp) -> SSAValue:
    return call.operands[_operand_positions(call)[1]]


@dataclass(frozen=True)
class ReturnCheckStatusPass(ModulePass):
    """Make the entry return an i32 status and return k + 1 right after check k fails."""

    name = "return-check-status"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = entry_function(op)
        if entry.function_type.outputs.data:
            raise LoweringError("return-check-status: the entry function already returns values")
        if len(entry.body.blocks) != 1:
            raise LoweringError("return-check-status: expects a single-block entry function")
        block = entry.body.block
        ret = block.last_op
        if not isinstance(ret, func.ReturnOp):
            raise LoweringError("return-check-status: the entry must end in func.return")
        ok = arith.ConstantOp(IntegerAttr(0, i32))
        Rewriter.replace_op(ret, [ok, func.ReturnOp(ok)])

        checks = [o for o in block.ops if isinstance(o, func.CallOp)
                  and isinstance(o.attributes.get(CHECK_SITE_ATTR), IntegerAttr)]
        if checks:
            failed = Block(arg_types=[i32])
            failed.args[0].name_hint = "site"
            failed.add_op(func.ReturnOp(failed.args[0]))
            entry.body.add_block(failed)
            offsets = set()
            current = block
            for call in checks:
                status = _status_of(call)
                current = self._stop_if_failed(call, status, current, self._failure(
                    call, status, failed))
                offsets.add(_arena_offset(status))
            if len(offsets) != 1:
                raise LoweringError("return-check-status: checks must share one status record")
            (offset,) = offsets
            if offset is not None:
                entry.attributes[STATUS_OFFSET_ATTR] = IntegerAttr(offset, i64)
        entry.function_type = entry.function_type.from_lists(
            list(entry.function_type.inputs.data), [i32])

    @staticmethod
    def _failure(call: func.CallOp, status: SSAValue, failed: Block) -> Block:
        """Where a failure of `call`'s check goes: the shared return of the site number,
        after a run of the full check kernel when the call checked its own indices."""
        fallback = call.attributes.get(CHECK_FALLBACK_ATTR)
        if not isinstance(fallback, StringAttr):
            return failed
        checked = call.operands[_operand_positions(call)[0]]
        block = Block(arg_types=[i32])
        block.add_ops([func.CallOp(fallback.data, [checked, status], []),
                       cf.BranchOp(failed, block.args[0])])
        assert failed.parent is not None
        failed.parent.insert_block_before(block, failed)
        return block

    @staticmethod
    def _stop_if_failed(call: func.CallOp, status: SSAValue, block: Block,
                        failed: Block) -> Block:
        """Branch to `failed` with the call's site number + 1 when its check failed; the
        ops after the call move to a new block, which is returned."""
        site = call.attributes[CHECK_SITE_ATTR]
        assert isinstance(site, IntegerAttr)
        zero_index = arith.ConstantOp(IntegerAttr(0, IndexType()))
        flag = memref.LoadOp.get(status, [zero_index])
        zero = arith.ConstantOp(IntegerAttr(0, i64))
        bad = arith.CmpiOp(flag, zero, "ne")
        tests: list[Operation] = [zero_index, flag, zero, bad]
        if NESTED_CHECKS_ATTR in call.attributes:  # the failed check recorded site + 1
            recorded = memref.LoadOp.get(call.operands[0], [zero_index])
            code = arith.TruncIOp(recorded, i32)
            tests += [recorded, code]
        else:
            code = arith.ConstantOp(IntegerAttr(site.value.data + 1, i32))
            tests.append(code)
        Rewriter.insert_op(tests, InsertPoint.after(call))
        assert code.next_op is not None
        rest = block.split_before(code.next_op)
        block.add_op(cf.ConditionalBranchOp(bad, failed, [code], rest, []))
        return rest


__all__ = ["ReturnCheckStatusPass"]
