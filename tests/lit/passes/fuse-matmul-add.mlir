// RUN: onnxc-opt %s -p fuse-matmul-add --split-input-file | filecheck %s

// MatMul + bias becomes one Gemm with C = bias, beta = 1.
func.func @matmul_add(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %m = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = graph.add(%c, %m) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @matmul_add(
// CHECK-NEXT:    %y = graph.gemm(%a, %b, %c) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y

// -----

// A Gemm without bias takes the addend as C.
func.func @gemm_add(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %m = graph.gemm(%a, %b) {alpha = 2.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %y = graph.add(%m, %c) : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @gemm_add(
// CHECK-NEXT:    %y = graph.gemm(%a, %b, %c) {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64}

// -----

// Batched (3-D) MatMul is not a Gemm; an addend that enlarges the result is not a bias.
func.func @no_gemm(%a: tensor<5x2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<5x2x4xf32>, %d: tensor<1x3xf32>, %e: tensor<2x1x4xf32>) -> (tensor<5x2x4xf32>, tensor<2x1x4xf32>) {
  %m = graph.matmul(%a, %b) : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
  %y = graph.add(%m, %c) : (tensor<5x2x4xf32>, tensor<5x2x4xf32>) -> tensor<5x2x4xf32>
  %n = graph.matmul(%d, %b) : (tensor<1x3xf32>, tensor<3x4xf32>) -> tensor<1x4xf32>
  %z = graph.add(%n, %e) : (tensor<1x4xf32>, tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
  func.return %y, %z : tensor<5x2x4xf32>, tensor<2x1x4xf32>
}
// CHECK-LABEL: func.func @no_gemm(
// CHECK-NOT:     graph.gemm
// CHECK:         graph.add
// CHECK:         graph.add
