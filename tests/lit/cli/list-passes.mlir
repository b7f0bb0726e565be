// --list-passes names xDSL's passes and every pass onnxc registers, without an input file.

// RUN: onnxc-opt --list-passes | filecheck %s

// CHECK:      Available Passes:
// CHECK-DAG:  --bind-constants
// CHECK-DAG:  --canonicalize {{ *}}Applies all canonicalization patterns
// CHECK-DAG:  --convert-arith-to-llvm
// CHECK-DAG:  --convert-cf-to-llvm
// CHECK-DAG:  --convert-func-to-llvm
// CHECK-DAG:  --convert-graph-to-loops
// CHECK-DAG:  --convert-math-to-llvm
// CHECK-DAG:  --convert-memref-to-llvm
// CHECK-DAG:  --convert-scf-to-cf
// CHECK-DAG:  --cse
// CHECK-DAG:  --dce
// CHECK-DAG:  --emit-entry-wrapper
// CHECK-DAG:  --plan-memory
// CHECK-DAG:  --reconcile-unrealized-casts
