// RUN: onnxc-opt %s -p shuffle-channel --split-input-file | filecheck %s

// ShuffleNet's Reshape(N, g, C/g, H, W) + Transpose(0, 2, 1, 3, 4) + Reshape(N, C, H, W).
func.func @shuffle(%x: tensor<1x6x2x2xf32>) -> tensor<1x6x2x2xf32> {
  %0 = graph.reshape(%x) : (tensor<1x6x2x2xf32>) -> tensor<1x2x3x2x2xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x2x2xf32>) -> tensor<1x3x2x2x2xf32>
  %2 = graph.reshape(%1) : (tensor<1x3x2x2x2xf32>) -> tensor<1x6x2x2xf32>
  func.return %2 : tensor<1x6x2x2xf32>
}
// CHECK-LABEL: func.func @shuffle(
// CHECK-NEXT:    %{{.*}} = graph.channel_shuffle(%x) {group = 2 : i64} : (tensor<1x6x2x2xf32>) -> tensor<1x6x2x2xf32>
// CHECK-NEXT:    func.return

// -----

// Another permutation, and a split of H instead of C, are not channel shuffles.
func.func @not_shuffle(%x: tensor<1x6x2x2xf32>) -> (tensor<1x6x2x2xf32>, tensor<1x6x2x2xf32>) {
  %0 = graph.reshape(%x) : (tensor<1x6x2x2xf32>) -> tensor<1x2x3x2x2xf32>
  %1 = graph.transpose(%0) {perm = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x2x3x2x2xf32>) -> tensor<1x2x3x2x2xf32>
  %2 = graph.reshape(%1) : (tensor<1x2x3x2x2xf32>) -> tensor<1x6x2x2xf32>
  %3 = graph.reshape(%x) : (tensor<1x6x2x2xf32>) -> tensor<1x6x2x1x2xf32>
  %4 = graph.transpose(%3) {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x6x2x1x2xf32>) -> tensor<1x2x6x1x2xf32>
  %5 = graph.reshape(%4) : (tensor<1x2x6x1x2xf32>) -> tensor<1x6x2x2xf32>
  func.return %2, %5 : tensor<1x6x2x2xf32>, tensor<1x6x2x2xf32>
}
// CHECK-LABEL: func.func @not_shuffle(
// CHECK-NOT:     graph.channel_shuffle
// CHECK:         func.return
