// RUN: onnxc-opt %s -p drop-flatten-after-linear --split-input-file | filecheck %s

func.func @gemm_flatten(%a: tensor<2x8xf32>, %w: tensor<8x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.gemm(%a, %w) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  %1 = graph.flatten(%0) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.relu(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @gemm_flatten(
// CHECK-NEXT:    %0 = graph.gemm(%a, %w)
// CHECK-NEXT:    %1 = graph.relu(%0)

// -----

// Negative: flatten(axis=0) of a 2-D result changes its shape; a 3-D MatMul result is not
// already 2-D.
func.func @not_2d(%a: tensor<2x8xf32>, %w: tensor<8x3xf32>, %b: tensor<4x2x8xf32>) -> (tensor<1x6xf32>, tensor<4x6xf32>) {
  %0 = graph.matmul(%a, %w) : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  %1 = graph.flatten(%0) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x6xf32>
  %2 = graph.matmul(%b, %w) : (tensor<4x2x8xf32>, tensor<8x3xf32>) -> tensor<4x2x3xf32>
  %3 = graph.flatten(%2) {axis = 1 : i64} : (tensor<4x2x3xf32>) -> tensor<4x6xf32>
  func.return %1, %3 : tensor<1x6xf32>, tensor<4x6xf32>
}
// CHECK-LABEL: func.func @not_2d(
// CHECK-NEXT:    %0 = graph.matmul(%a, %w)
// CHECK-NEXT:    %1 = graph.flatten(%0)
// CHECK-NEXT:    %2 = graph.matmul(%b, %w)
// CHECK-NEXT:    %3 = graph.flatten(%2)
