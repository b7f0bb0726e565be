// RUN: onnxc-opt %s -p drop-layout-cast-at-output --split-input-file | filecheck %s

// A Gemm writes its transposed result itself: Y^T = B'^T A'^T, so operands swap, both trans
// flags flip and a 1-D bias is seen as a column.
func.func @gemm_output(%a: tensor<2x8xf32>, %w: tensor<3x8xf32>, %c: tensor<3xf32>) -> tensor<3x2xf32> {
  %0 = graph.gemm(%a, %w, %c) {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %1 : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @gemm_output(
// CHECK-NEXT:    %0 = graph.reshape(%c) : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT:    %1 = graph.gemm(%w, %a, %0) {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<3x8xf32>, tensor<2x8xf32>, tensor<3x1xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %1

// -----

func.func @matmul_output(%a: tensor<2x8xf32>, %b: tensor<8x3xf32>) -> tensor<3x2xf32> {
  %0 = graph.matmul(%a, %b) : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %1 : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @matmul_output(
// CHECK-NEXT:    %0 = graph.gemm(%b, %a) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 1 : i64, transB = 1 : i64} : (tensor<8x3xf32>, tensor<2x8xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %0

// -----

// A conversion of a conversion composes; of a constant, the constant is stored re-laid.
func.func @conversions(%x: tensor<1x2x3x4xf32>) -> (tensor<1x3x2x4xf32>, tensor<3x2xf32>) {
  %0 = graph.transpose(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x3x4x2xf32>) -> tensor<1x3x2x4xf32>
  %c = graph.constant {value = dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %2 = graph.transpose(%c) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %1, %2 : tensor<1x3x2x4xf32>, tensor<3x2xf32>
}
// CHECK-LABEL: func.func @conversions(
// CHECK-NEXT:    %0 = graph.transpose(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
// CHECK-NEXT:    %1 = graph.constant {value = dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>} : tensor<3x2xf32>
// CHECK-NEXT:    func.return %0, %1

// -----

// Negative: the conversion is not only a graph output (the relu reads it), and a conv has no
// output layout choice at the graph level.
func.func @not_at_output(%a: tensor<2x8xf32>, %w: tensor<8x3xf32>, %x: tensor<1x2x3x3xf32>, %k: tensor<4x2x1x1xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x3x3x4xf32>) {
  %0 = graph.gemm(%a, %w) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = graph.relu(%1) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %3 = graph.conv(%x, %k) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x3x3xf32>
  %4 = graph.transpose(%3) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x3x3xf32>) -> tensor<1x3x3x4xf32>
  func.return %1, %2, %4 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<1x3x3x4xf32>
}
// CHECK-LABEL: func.func @not_at_output(
// CHECK-NEXT:    %0 = graph.gemm(%a, %w)
// CHECK-NEXT:    %1 = graph.transpose(%0)
// CHECK-NEXT:    %2 = graph.relu(%1)
// CHECK-NEXT:    %3 = graph.conv(%x, %k)
// CHECK-NEXT:    %4 = graph.transpose(%3)
