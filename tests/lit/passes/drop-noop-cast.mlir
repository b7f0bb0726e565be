// RUN: onnxc-opt %s -p drop-noop-cast --split-input-file | filecheck %s

func.func @same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.cast(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.relu(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @same_type(
// CHECK-NEXT:    %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %0

// -----

// Negative: a Cast that converts stays.
func.func @converts(%x: tensor<2x3xf32>) -> tensor<2x3xi64> {
  %0 = graph.cast(%x) : (tensor<2x3xf32>) -> tensor<2x3xi64>
  func.return %0 : tensor<2x3xi64>
}
// CHECK-LABEL: func.func @converts(
// CHECK-NEXT:    %0 = graph.cast(%x) : (tensor<2x3xf32>) -> tensor<2x3xi64>
