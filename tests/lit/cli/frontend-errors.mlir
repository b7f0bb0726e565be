// Model errors from the ONNX frontends (OnnxcError) are one `error:` line and exit code 1;
// under --verify-diagnostics they are printed like verifier errors instead.

// RUN: not onnxc-opt %S/Inputs/corrupt.onnx 2>&1 | filecheck %s --check-prefix=CORRUPT
// RUN: not onnxc-opt %S/Inputs/unsupported.onnxtxt 2>&1 | filecheck %s --check-prefix=NO-OP
// RUN: onnxc-opt %S/Inputs/unsupported.onnxtxt --verify-diagnostics | filecheck %s --check-prefix=DIAG

// CORRUPT:          error: cannot parse the ONNX model
// CORRUPT-NOT:      Traceback
// NO-OP:            error: unsupported op 'NoSuchOp' (node '{{.*}}', opset 17)
// NO-OP-NOT:        Traceback
// DIAG:             UnsupportedOpError: unsupported op 'NoSuchOp'
