// RUN: onnxc-opt %s -p drop-flatten-after-global-pool --split-input-file | filecheck %s

// The consumer of the N x C flatten is a reshape (an SE block's excitation shape): it reads
// the pool result directly.
func.func @pool_flatten_reshape(%x: tensor<2x8x5x5xf32>) -> tensor<2x8x1x1xf32> {
  %0 = graph.global_average_pool(%x) : (tensor<2x8x5x5xf32>) -> tensor<2x8x1x1xf32>
  %1 = graph.flatten(%0) {axis = 1 : i64} : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32>
  %2 = graph.reshape(%1) : (tensor<2x8xf32>) -> tensor<2x8x1x1xf32>
  func.return %2 : tensor<2x8x1x1xf32>
}
// CHECK-LABEL: func.func @pool_flatten_reshape(
// CHECK-NEXT:    %0 = graph.global_average_pool(%x)
// CHECK-NEXT:    func.return %0 : tensor<2x8x1x1xf32>

// -----

// Negative: Gemm needs the 2-D operand, and the flatten of a non-pool stays.
func.func @gemm_consumer(%x: tensor<2x8x5x5xf32>, %w: tensor<8x3xf32>, %y: tensor<2x8x1x1xf32>) -> (tensor<2x3xf32>, tensor<16xf32>) {
  %0 = graph.global_max_pool(%x) : (tensor<2x8x5x5xf32>) -> tensor<2x8x1x1xf32>
  %1 = graph.flatten(%0) {axis = 1 : i64} : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32>
  %2 = graph.gemm(%1, %w) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  %3 = graph.flatten(%y) {axis = 1 : i64} : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32>
  %4 = graph.reshape(%3) : (tensor<2x8xf32>) -> tensor<16xf32>
  func.return %2, %4 : tensor<2x3xf32>, tensor<16xf32>
}
// CHECK-LABEL: func.func @gemm_consumer(
// CHECK-NEXT:    %0 = graph.global_max_pool(%x)
// CHECK-NEXT:    %1 = graph.flatten(%0)
// CHECK-NEXT:    %2 = graph.gemm(%1, %w)
// CHECK-NEXT:    %3 = graph.flatten(%y)
// CHECK-NEXT:    %4 = graph.reshape(%3)
