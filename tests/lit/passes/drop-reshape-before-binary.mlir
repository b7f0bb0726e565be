// RUN: onnxc-opt %s -p drop-reshape-before-binary --split-input-file | filecheck %s

func.func @leading_ones(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.unsqueeze(%b) {axes = array<i64: 0, 1>} : (tensor<4xf32>) -> tensor<1x1x4xf32>
  %1 = graph.add(%x, %0) : (tensor<2x3x4xf32>, tensor<1x1x4xf32>) -> tensor<2x3x4xf32>
  func.return %1 : tensor<2x3x4xf32>
}
// CHECK-LABEL: func.func @leading_ones(
// CHECK-NEXT:    %0 = graph.add(%x, %b) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %0

// -----

// Negative: a trailing 1 changes how the operand broadcasts (4 -> 4x1), and without the
// reshape the result would lose its leading dimension.
func.func @not_leading(%x: tensor<4x3xf32>, %b: tensor<4xf32>, %y: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<1x3xf32>) {
  %0 = graph.unsqueeze(%b) {axes = array<i64: 1>} : (tensor<4xf32>) -> tensor<4x1xf32>
  %1 = graph.mul(%x, %0) : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  %2 = graph.reshape(%y) : (tensor<3xf32>) -> tensor<1x3xf32>
  %3 = graph.sub(%2, %y) : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  func.return %1, %3 : tensor<4x3xf32>, tensor<1x3xf32>
}
// CHECK-LABEL: func.func @not_leading(
// CHECK-NEXT:    %0 = graph.unsqueeze(%b)
// CHECK-NEXT:    %1 = graph.mul(%x, %0)
// CHECK-NEXT:    %2 = graph.reshape(%y)
// CHECK-NEXT:    %3 = graph.sub(%2, %y)
