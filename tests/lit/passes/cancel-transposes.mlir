// RUN: onnxc-opt %s -p cancel-transposes --split-input-file | filecheck %s

func.func @inverse(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = graph.transpose(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %1 : tensor<1x2x3x4xf32>
}
// CHECK-LABEL: func.func @inverse(
// CHECK-NEXT:    func.return %x

// -----

func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = graph.transpose(%x) {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  func.return %1 : tensor<4x2x3xf32>
}
// CHECK-LABEL: func.func @compose(
// CHECK-NEXT:    %0 = graph.transpose(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %0

// -----

func.func @identity_perm(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.transpose(%x) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @identity_perm(
// CHECK-NEXT:    func.return %x

// -----

// Negative: a single real transpose, and a transpose of a computed value.
func.func @single(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = graph.relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %1 : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @single(
// CHECK-NEXT:    %0 = graph.relu(%x)
// CHECK-NEXT:    %1 = graph.transpose(%0)
