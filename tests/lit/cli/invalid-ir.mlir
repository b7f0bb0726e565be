// Invalid IR: one `file:line:col: error:` line on stderr, exit code 1, and no traceback
// unless ONNXC_DEBUG=1. Verifier failures point at the failing op, also after a split.

// RUN: not onnxc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: env ONNXC_DEBUG=1 not onnxc-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=DEBUG
// RUN: not onnxc-opt %S/Inputs/parse-error.mlir 2>&1 | filecheck %s --check-prefix=PARSE
// RUN: not onnxc-opt %S/Inputs/no-such-file.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not onnxc-opt %S/Inputs/input.unknown 2>&1 | filecheck %s --check-prefix=EXTENSION

func.func @fine(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  func.return %x : tensor<2x3xf32>
}

// -----

func.func @wrong_shape(%x: tensor<2x3xf32>) -> tensor<3x3xf32> {
  %0 = graph.transpose(%x) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}
// CHECK:      invalid-ir.mlir:[[# @LINE - 3]]:3: error: 'graph.transpose' op result shapes [(3, 3)] differ from inferred [(3, 2)]
// CHECK-NOT:  Traceback

// DEBUG:      Traceback (most recent call last):
// DEBUG:      VerifyException: graph.transpose: result shapes

// PARSE:      parse-error.mlir:3:{{[0-9]+}}: error: Operation graph.no_such_op is not registered
// PARSE-NOT:  Traceback
// MISSING:    error: cannot open '{{.*}}no-such-file.mlir': No such file or directory
// EXTENSION:  error: unrecognized input extension '.unknown'; choose a frontend with -f/--frontend (mlir, onnx, onnxtxt)
