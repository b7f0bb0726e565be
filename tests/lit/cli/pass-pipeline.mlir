// MLIR's nested --pass-pipeline is flattened to xDSL's list; both spellings run the same
// passes in the same order, and the IR dumps (on stderr) show that order.

// RUN: onnxc-opt %s --pass-pipeline='builtin.module(func.func(cse), canonicalize)' | filecheck %s
// RUN: onnxc-opt %s -p cse,canonicalize | filecheck %s
// RUN: onnxc-opt %s --pass-pipeline='builtin.module(func.func(cse),any(dce))' --mlir-print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=ORDER
// RUN: onnxc-opt %s --pass-pipeline='arith-add-fastmath{flags=fast}' | filecheck %s --check-prefix=OPTIONS
// RUN: onnxc-opt %s --pass-pipeline='builtin.module()' | filecheck %s --check-prefix=EMPTY

func.func @twice(%x: tensor<4xf32>, %a: f32) -> (tensor<4xf32>, f32) {
  %0 = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = arith.addf %a, %a : f32
  func.return %2, %3 : tensor<4xf32>, f32
}

// CHECK-LABEL: func.func @twice(
// CHECK-NEXT:    %0 = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %1 = graph.add(%0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// ORDER:      IR Dump After CsePass (cse)
// ORDER:      IR Dump After DeadCodeElimination (dce)
// ORDER-NOT:  IR Dump

// OPTIONS:    arith.addf %a, %a fastmath<fast> : f32

// EMPTY:      %1 = graph.relu(%x)
