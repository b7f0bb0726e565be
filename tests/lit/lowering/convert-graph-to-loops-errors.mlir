// RUN: not onnxc-opt %s -p convert-graph-to-loops 2>&1 | filecheck %s

// An op without a lowering rule stops the pass with one error naming the op.

func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "test.op"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK:     error: convert-graph-to-loops: no lowering for op 'test.op' in @main
// CHECK-NOT: Traceback
