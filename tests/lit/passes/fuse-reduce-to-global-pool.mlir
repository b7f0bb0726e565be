// RUN: onnxc-opt %s -p fuse-reduce-to-global-pool --split-input-file | filecheck %s

// x.mean([2, 3], keepdim=True) -> GlobalAveragePool.
func.func @mean_hw(%x: tensor<1x8x5x5xf32>) -> tensor<1x8x1x1xf32> {
  %0 = graph.reduce_mean(%x) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x8x5x5xf32>) -> tensor<1x8x1x1xf32>
  func.return %0 : tensor<1x8x1x1xf32>
}
// CHECK-LABEL: func.func @mean_hw(
// CHECK-NEXT:    %{{.*}} = graph.global_average_pool(%x) : (tensor<1x8x5x5xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    func.return

// -----

// Mean over W, then over H, without keepdims (x.mean(3).mean(2)) -> pool + reshape to N x C.
func.func @mean_w_then_h(%x: tensor<2x8x5x6xf32>) -> tensor<2x8xf32> {
  %0 = graph.reduce_mean(%x) {axes = array<i64: 3>, keepdims = 0 : i64} : (tensor<2x8x5x6xf32>) -> tensor<2x8x5xf32>
  %1 = graph.reduce_mean(%0) {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<2x8x5xf32>) -> tensor<2x8xf32>
  func.return %1 : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @mean_w_then_h(
// CHECK-NEXT:    %[[P:.*]] = graph.global_average_pool(%x) : (tensor<2x8x5x6xf32>) -> tensor<2x8x1x1xf32>
// CHECK-NEXT:    %{{.*}} = graph.reshape(%[[P]]) : (tensor<2x8x1x1xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return

// -----

// Negative: a mean over H only, or over C and H, is not a global pool.
func.func @partial_means(%x: tensor<1x8x5x5xf32>) -> (tensor<1x8x1x5xf32>, tensor<1x1x1x5xf32>) {
  %0 = graph.reduce_mean(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<1x8x5x5xf32>) -> tensor<1x8x1x5xf32>
  %1 = graph.reduce_mean(%x) {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x8x5x5xf32>) -> tensor<1x1x1x5xf32>
  func.return %0, %1 : tensor<1x8x1x5xf32>, tensor<1x1x1x5xf32>
}
// CHECK-LABEL: func.func @partial_means(
// CHECK-NOT:     graph.global_average_pool
// CHECK:         graph.reduce_mean
// CHECK:         graph.reduce_mean
