// Malformed pipelines and unknown passes: one `error:` line, exit code 1, no traceback.

// RUN: not onnxc-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not onnxc-opt %s -p csee 2>&1 | filecheck %s --check-prefix=TYPO
// RUN: not onnxc-opt %s --pass-pipeline='builtin.module(func.func(cse)' 2>&1 | filecheck %s --check-prefix=UNBALANCED
// RUN: not onnxc-opt %s --pass-pipeline='builtin.module(cse,)' 2>&1 | filecheck %s --check-prefix=TRAILING
// RUN: not onnxc-opt %s -p 'arith-add-fastmath{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not onnxc-opt %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=BRACE
// RUN: not onnxc-opt %s -p cse --pass-pipeline='builtin.module(cse)' 2>&1 | filecheck %s --check-prefix=BOTH

// UNKNOWN:        error: unknown pass 'no-such-pass' (see --list-passes)
// UNKNOWN-NOT:    Traceback
// TYPO:           error: unknown pass 'csee'; did you mean 'cse'?
// UNBALANCED:     error: unbalanced '(' at column 15
// TRAILING:       error: empty pass name at column 20
// OPTION:         error: bad options for pass 'arith-add-fastmath': Provided arguments ["no_such_option"]
// BRACE:          error: unterminated '{' at column 4
// BOTH:           error: --pass-pipeline cannot be combined with -p/--passes

func.func @f() {
  func.return
}
