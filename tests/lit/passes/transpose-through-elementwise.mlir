// RUN: onnxc-opt %s -p transpose-through-elementwise --split-input-file | filecheck %s

// NHWC -> NCHW transposes around a relu and a per-channel add meet and cancel.
func.func @meet_and_cancel(%x: tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> {
  %b = graph.constant {value = dense<[[[1.000000e+00]], [[2.000000e+00]], [[3.000000e+00]]]> : tensor<3x1x1xf32>} : tensor<3x1x1xf32>
  %0 = graph.transpose(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
  %1 = graph.relu(%0) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %2 = graph.add(%1, %b) : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %3 = graph.transpose(%2) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x4xf32>) -> tensor<1x4x4x3xf32>
  func.return %3 : tensor<1x4x4x3xf32>
}
// CHECK-LABEL: func.func @meet_and_cancel(
// CHECK:         %[[R:.*]] = graph.relu(%x) : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant {value = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00]]]]> : tensor<1x1x1x3xf32>} : tensor<1x1x1x3xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add(%[[R]], %[[C]]) : (tensor<1x4x4x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x4x4x3xf32>
// CHECK-NEXT:    func.return %[[A]]

// -----

func.func @two_operands(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = graph.transpose(%a) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = graph.transpose(%b) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = graph.mul(%0, %1) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %2 : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @two_operands(
// CHECK-NEXT:    %0 = graph.mul(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.transpose(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %1

// -----

// Negative: the transpose has another user, the operands use different permutations, and the
// other operand is a runtime value that is not transposed.
func.func @stays(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %y: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %0 = graph.transpose(%a) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = graph.exp(%0) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %2 = graph.transpose(%b) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = graph.add(%2, %y) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %0, %1, %3 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}
// CHECK-LABEL: func.func @stays(
// CHECK-NEXT:    %0 = graph.transpose(%a)
// CHECK-NEXT:    %1 = graph.exp(%0)
// CHECK-NEXT:    %2 = graph.transpose(%b)
// CHECK-NEXT:    %3 = graph.add(%2, %y)
