// RUN: not onnxc-opt %s -p insert-runtime-checks 2>&1 | filecheck %s

// A constant index outside its axis can never run: a compile-time error naming the node.

func.func @gather(%x: tensor<4xf32>) -> tensor<2xf32> {
  %i = graph.constant {value = dense<[0, 4]> : tensor<2xi64>} : tensor<2xi64>
  %y = graph.gather(%x, %i) {onnx.node = "pick", axis = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// CHECK:     error: node 'pick' (Gather): constant indices value 4 is out of range [-4, 3]
// CHECK-NOT: Traceback
