"""One part of a model's LLVM IR -> a relocatable object, in its own process.

    python -m onnxc.runtime.codegen_worker < HEADER-LINE + IR > object

The header line is JSON: triple, cpu, features, opt_level. The object goes to stdout; an
error is one line on stderr and exit status 1 (an LLVM assertion kills the process, which
the parent reports: runtime/parallel_codegen.py). It imports only llvmlite and onnxc's
target and JIT helpers, not the compiler.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    import llvmlite.binding as llvm

    from onnxc.runtime.jit import _optimize
    from onnxc.runtime.target import Target, initialize_llvm

    header = json.loads(sys.stdin.buffer.readline())
    text = sys.stdin.buffer.read().decode()
    initialize_llvm()
    target = Target("worker", header["triple"], header["cpu"], header["features"])
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as error:
        print(f"LLVM rejected the generated IR: {error}", file=sys.stderr)
        return 1
    machine = target.create_target_machine(header["opt_level"])
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    _optimize(module, machine, header["opt_level"])
    sys.stdout.buffer.write(machine.emit_object(module))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
