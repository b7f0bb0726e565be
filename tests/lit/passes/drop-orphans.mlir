// RUN: onnxc-opt %s -p drop-orphans --split-input-file | filecheck %s

func.func @dead_chain(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = graph.constant {value = dense<1.000000e+00> : tensor<3xf32>} : tensor<3xf32>
  %0 = graph.add(%x, %c) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.exp(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @dead_chain(
// CHECK-NEXT:    %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %0

// -----

// Negative: everything is used (the constant through the add).
func.func @all_live(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = graph.constant {value = dense<1.000000e+00> : tensor<3xf32>} : tensor<3xf32>
  %0 = graph.add(%x, %c) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @all_live(
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %0 = graph.add(%x, %c)
// CHECK-NEXT:    func.return %0
