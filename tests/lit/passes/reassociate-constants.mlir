// RUN: onnxc-opt %s -p reassociate-constants --split-input-file | filecheck %s

// (c1 + x) + c2 -> x + (c1 + c2); (x * c1) * c2 -> x * (c1 * c2).
func.func @reassociate(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %c1 = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %c2 = graph.constant {value = dense<10.0> : tensor<f32>} : tensor<f32>
  %0 = graph.add(%c1, %x) : (tensor<2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = graph.add(%0, %c2) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %2 = graph.mul(%x, %c2) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %3 = graph.mul(%2, %c1) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %1, %3 : tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @reassociate(
// CHECK-DAG:     %[[A:.*]] = graph.constant {value = dense<[1.100000e+01, 1.200000e+01]> : tensor<2xf32>}
// CHECK-DAG:     %[[M:.*]] = graph.constant {value = dense<[1.000000e+01, 2.000000e+01]> : tensor<2xf32>}
// CHECK-DAG:     %[[S:.*]] = graph.add(%x, %[[A]])
// CHECK-DAG:     %[[P:.*]] = graph.mul(%x, %[[M]])
// CHECK:         func.return %[[S]], %[[P]]

// -----

// The inner sum is used elsewhere, and mixed add/mul do not reassociate.
func.func @keep(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %c = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %0 = graph.add(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = graph.add(%0, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = graph.mul(%0, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @keep(
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %0 = graph.add(%x, %c)
// CHECK-NEXT:    %1 = graph.add(%0, %c)
// CHECK-NEXT:    %2 = graph.mul(%0, %c)
