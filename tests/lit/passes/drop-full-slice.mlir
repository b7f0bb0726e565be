// RUN: onnxc-opt %s -p drop-full-slice --split-input-file | filecheck %s

func.func @full(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.slice(%x) {starts = array<i64: 0, -3>, ends = array<i64: 9223372036854775807, 3>, axes = array<i64: 0, 1>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @full(
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>

// -----

// Negative: a reversal keeps every element but not their order; a real cut stays too.
func.func @not_full(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x2xf32>) {
  %0 = graph.slice(%x) {starts = array<i64: -1>, ends = array<i64: -9223372036854775807>, axes = array<i64: 1>, steps = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.slice(%x) {starts = array<i64: 1>, ends = array<i64: 3>, axes = array<i64: 1>, steps = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @not_full(
// CHECK-NEXT:    %0 = graph.slice(%x)
// CHECK-NEXT:    %1 = graph.slice(%x)
