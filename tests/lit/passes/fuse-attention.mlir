// RUN: onnxc-opt %s -p fuse-attention --split-input-file | filecheck %s

// BERT self-attention as exported: K^T is a Transpose of the head-split K ([B,S,H,D] ->
// [B,H,D,S]), scores / sqrt(D), + the additive mask, Softmax(-1), @ V.
func.func @bert_attention(%q: tensor<1x2x8x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x2x8x16xf32>, %mask: tensor<1x1x1x8xf32>) -> tensor<1x2x8x16xf32> {
  %c = graph.constant {value = dense<4.000000e+00> : tensor<f32>} : tensor<f32>
  %kt = graph.transpose(%k) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x16x8xf32>
  %s = graph.matmul(%q, %kt) : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %d = graph.div(%s, %c) : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %m = graph.add(%d, %mask) : (tensor<1x2x8x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x8x8xf32>
  %p = graph.softmax(%m) {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = graph.matmul(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  func.return %o : tensor<1x2x8x16xf32>
}
// CHECK-LABEL: func.func @bert_attention(
// CHECK-NEXT:    %[[K:.*]] = graph.transpose(%k) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
// CHECK-NEXT:    %{{.*}} = graph.attention(%q, %[[K]], %v, %mask) {scale = 2.500000e-01 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x8x16xf32>
// CHECK-NEXT:    func.return

// -----

// No mask, scale as a Mul on the left, K^T a plain swap of the last two axes.
func.func @unmasked(%q: tensor<4x6xf32>, %k: tensor<5x6xf32>, %v: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %c = graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  %kt = graph.transpose(%k) {perm = array<i64: 1, 0>} : (tensor<5x6xf32>) -> tensor<6x5xf32>
  %s = graph.matmul(%q, %kt) : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %d = graph.mul(%c, %s) : (tensor<f32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %p = graph.softmax(%d) {axis = 1 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %o = graph.matmul(%p, %v) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  func.return %o : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @unmasked(
// CHECK-NEXT:    %{{.*}} = graph.attention(%q, %k, %v) {scale = 5.000000e-01 : f32}
// CHECK-NEXT:    func.return

// -----

// Negative: the attention probabilities are returned too (they must be materialised), and
// a softmax over another axis than the keys is not attention.
func.func @probabilities_escape(%q: tensor<4x6xf32>, %kt: tensor<6x5xf32>, %v: tensor<5x3xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>, tensor<4x3xf32>) {
  %s = graph.matmul(%q, %kt) : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %p = graph.softmax(%s) {axis = 1 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %o = graph.matmul(%p, %v) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  %s2 = graph.matmul(%q, %kt) : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %p2 = graph.softmax(%s2) {axis = 0 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %o2 = graph.matmul(%p2, %v) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  func.return %o, %p, %o2 : tensor<4x3xf32>, tensor<4x5xf32>, tensor<4x3xf32>
}
// CHECK-LABEL: func.func @probabilities_escape(
// CHECK-NOT:     graph.attention
// CHECK:         graph.softmax
// CHECK:         graph.softmax
