// RUN: onnxc-opt %s -p fuse-matmul-transpose --split-input-file | filecheck %s

// x @ W^T (a Linear exported as Transpose + MatMul) -> Gemm transB.
func.func @transposed_rhs(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %wt = graph.transpose(%w) {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %y = graph.matmul(%x, %wt) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @transposed_rhs(
// CHECK-NEXT:    %{{.*}} = graph.gemm(%x, %w) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return

// -----

// A^T @ B, and a Gemm whose B is transposed again toggles its flag back.
func.func @transposed_lhs_and_gemm(%a: tensor<3x2xf32>, %b: tensor<3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x5xf32> {
  %at = graph.transpose(%a) {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %y = graph.matmul(%at, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %wt = graph.transpose(%w) {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %z = graph.gemm(%y, %wt) {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %z : tensor<2x5xf32>
}
// CHECK-LABEL: func.func @transposed_lhs_and_gemm(
// CHECK-NEXT:    %[[Y:.*]] = graph.gemm(%a, %b) {{{.*}}transA = 1 : i64, transB = 0 : i64}
// CHECK-NEXT:    %{{.*}} = graph.gemm(%[[Y]], %w) {alpha = 2.000000e+00 : f32, {{.*}}transA = 0 : i64, transB = 1 : i64}
// CHECK-NEXT:    func.return

// -----

// Negative: the transposed value is also returned (the Transpose must stay anyway), and a
// batched MatMul has no Gemm form.
func.func @shared_and_batched(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>, %b: tensor<2x4x3xf32>, %c: tensor<2x4x5xf32>) -> (tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x3x5xf32>) {
  %wt = graph.transpose(%w) {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %y = graph.matmul(%x, %wt) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %bt = graph.transpose(%b) {perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  %z = graph.matmul(%bt, %c) : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  func.return %y, %wt, %z : tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x3x5xf32>
}
// CHECK-LABEL: func.func @shared_and_batched(
// CHECK-NOT:     graph.gemm
// CHECK:         graph.matmul
// CHECK:         graph.matmul
