// RUN: onnxc-opt %s -p cancel-squeeze-unsqueeze --split-input-file | filecheck %s

func.func @pairs(%x: tensor<2x1x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x1x3xf32>, tensor<2x3xf32>) {
  %0 = graph.squeeze(%x) {axes = array<i64: 1>} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
  %1 = graph.unsqueeze(%0) {axes = array<i64: -2>} : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
  %2 = graph.unsqueeze(%y) {axes = array<i64: 0, 3>} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  %3 = graph.squeeze(%2) {axes = array<i64: 3, 0>} : (tensor<1x2x3x1xf32>) -> tensor<2x3xf32>
  func.return %1, %3 : tensor<2x1x3xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @pairs(
// CHECK-NEXT:    func.return %x, %y

// -----

// Negative: different axes move the unit dimension.
func.func @other_axes(%x: tensor<2x1x3xf32>) -> tensor<1x2x3xf32> {
  %0 = graph.squeeze(%x) {axes = array<i64: 1>} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
  %1 = graph.unsqueeze(%0) {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
  func.return %1 : tensor<1x2x3xf32>
}
// CHECK-LABEL: func.func @other_axes(
// CHECK-NEXT:    %0 = graph.squeeze(%x)
// CHECK-NEXT:    %1 = graph.unsqueeze(%0)
