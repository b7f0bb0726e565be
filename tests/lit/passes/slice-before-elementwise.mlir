// RUN: onnxc-opt %s -p slice-before-elementwise --split-input-file | filecheck %s

// Each operand is sliced on the axes it does not broadcast; a constant is sliced now.
func.func @binary(%x: tensor<4x6xf32>, %b: tensor<4x1xf32>) -> tensor<2x6xf32> {
  %c = graph.constant {value = dense<[[1.000000e+00], [2.000000e+00], [3.000000e+00], [4.000000e+00]]> : tensor<4x1xf32>} : tensor<4x1xf32>
  %0 = graph.add(%x, %b) : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %1 = graph.mul(%0, %c) : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  %2 = graph.slice(%1) {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 0>, steps = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  func.return %2 : tensor<2x6xf32>
}
// CHECK-LABEL: func.func @binary(
// CHECK-NEXT:    %c = graph.constant
// CHECK-NEXT:    %0 = graph.slice(%x) {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 0>, steps = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %1 = graph.slice(%b) {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 0>, steps = array<i64: 1>} : (tensor<4x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %2 = graph.add(%0, %1) : (tensor<2x6xf32>, tensor<2x1xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %3 = graph.constant {value = dense<{{\[}}[2.000000e+00], [3.000000e+00]]> : tensor<2x1xf32>} : tensor<2x1xf32>
// CHECK-NEXT:    %4 = graph.mul(%2, %3) : (tensor<2x6xf32>, tensor<2x1xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    func.return %4

// -----

func.func @unary(%x: tensor<8xf32>) -> tensor<4xf32> {
  %0 = graph.exp(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = graph.slice(%0) {starts = array<i64: 0>, ends = array<i64: 8>, axes = array<i64: 0>, steps = array<i64: 2>} : (tensor<8xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK-LABEL: func.func @unary(
// CHECK-NEXT:    %0 = graph.slice(%x) {{.*}} : (tensor<8xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %1 = graph.exp(%0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %1

// -----

// Negative: the elementwise result is also used whole, and a slice of a non-elementwise op.
func.func @shared(%x: tensor<8xf32>, %m: tensor<4x8xf32>, %n: tensor<8x4xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<2x2xf32>) {
  %0 = graph.exp(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = graph.slice(%0) {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 0>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<4xf32>
  %2 = graph.matmul(%m, %n) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %3 = graph.slice(%2) {starts = array<i64: 0, 0>, ends = array<i64: 2, 2>, axes = array<i64: 0, 1>, steps = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<2x2xf32>
  func.return %0, %1, %3 : tensor<8xf32>, tensor<4xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @shared(
// CHECK-NEXT:    %0 = graph.exp(%x)
// CHECK-NEXT:    %1 = graph.slice(%0)
// CHECK-NEXT:    %2 = graph.matmul(%m, %n)
// CHECK-NEXT:    %3 = graph.slice(%2)
