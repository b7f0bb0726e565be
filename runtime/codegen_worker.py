"""Parts of a model's LLVM IR -> relocatable objects, in their own process.

    python -m onnxc.runtime.codegen_worker < HEADER-LINE (FRAME)* > (OBJECT)*

The header line is JSON: triple, cpu, features, opt_level. Each frame is a module's IR: a
line with its length in bytes (decimal), optionally followed by ` no-lsr` (compile it without
LLVM's loop strength reduction: runtime/parallel_codegen.py CodegenPool.submit), then the
text. Each object goes to stdout as soon as its module is compiled, as an 8-byte
little-endian length and the bytes, in frame order; the worker ends at the end of its
input, which may come before the header (a spare worker that was not needed:
runtime/parallel_codegen.py SpareWorkers). An error is one line on stderr and exit status
1 (an LLVM assertion kills the process, which the parent reports:
runtime/parallel_codegen.py).
It imports only llvmlite and onnxc's target and code-generation step
(runtime/object_code.py), not the compiler.
"""

from __future__ import annotations

import json
import struct
import sys


def main() -> int:
    from onnxc.errors import CompilationError
    from onnxc.runtime.object_code import compile_object
    from onnxc.target import Target, initialize_llvm

    source, sink = sys.stdin.buffer, sys.stdout.buffer
    initialize_llvm()  # before the header: a spare worker does it while it waits
    line = source.readline()
    if not line.strip():
        return 0  # a spare worker that was not needed
    header = json.loads(line)
    target = Target("worker", header["triple"], header["cpu"], header["features"])
    machine = target.create_target_machine(header["opt_level"])  # one for every module
    while True:
        length, _, flags = source.readline().partition(b" ")
        if not length.strip():
            return 0
        text = source.read(int(length)).decode()
        try:
            code = compile_object(text, machine, header["opt_level"],
                                  strength_reduction=b"no-lsr" not in flags)
        except CompilationError as error:
            print(error, file=sys.stderr)
            return 1
        sink.write(struct.pack("<Q", len(code)) + code)
        sink.flush()


if __name__ == "__main__":
    sys.exit(main())
