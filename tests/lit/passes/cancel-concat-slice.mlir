// RUN: onnxc-opt %s -p cancel-concat-slice --split-input-file | filecheck %s

func.func @slices(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x5xf32>) {
  %0 = graph.concat(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %1 = graph.slice(%0) {starts = array<i64: 0>, ends = array<i64: 3>, axes = array<i64: -1>, steps = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x3xf32>
  %2 = graph.slice(%0) {starts = array<i64: 3, 0>, ends = array<i64: 100, 2>, axes = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x5xf32>
  func.return %1, %2 : tensor<2x3xf32>, tensor<2x5xf32>
}
// CHECK-LABEL: func.func @slices(
// CHECK-NEXT:    func.return %a, %b

// -----

func.func @split(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %0 = graph.concat(%a, %b) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %1, %2 = graph.split(%0) {axis = 0 : i64} : (tensor<6x3xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>)
  func.return %1, %2 : tensor<2x3xf32>, tensor<4x3xf32>
}
// CHECK-LABEL: func.func @split(
// CHECK-NEXT:    func.return %a, %b

// -----

// Negative: a slice across the boundary, one that also cuts another axis, and a split with
// other part sizes.
func.func @not_parts(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> (tensor<2x4xf32>, tensor<1x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = graph.concat(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %1 = graph.slice(%0) {starts = array<i64: 2>, ends = array<i64: 6>, axes = array<i64: 1>, steps = array<i64: 1>} : (tensor<2x8xf32>) -> tensor<2x4xf32>
  %2 = graph.slice(%0) {starts = array<i64: 0, 0>, ends = array<i64: 3, 1>, axes = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<1x3xf32>
  %3, %4 = graph.split(%0) {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  func.return %1, %2, %3, %4 : tensor<2x4xf32>, tensor<1x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @not_parts(
// CHECK-NEXT:    %0 = graph.concat(%a, %b)
// CHECK-NEXT:    %1 = graph.slice(%0)
// CHECK-NEXT:    %2 = graph.slice(%0)
// CHECK-NEXT:    %3, %4 = graph.split(%0)
