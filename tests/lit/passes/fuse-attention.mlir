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

// -----

// transformers' SDPA export (GPT-2): the probabilities through Where(IsNaN(P), 0, P) (a row
// with no key to attend is 0), the mask Where(And(causal triangle, padding), 0, -inf). The
// attention zeroes NaN rows itself; the constant triangle becomes causal_offset and the
// mask the padding row alone.
func.func @gpt2_attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf32> {
  %tri = graph.constant {value = dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>} : tensor<1x1x4x4xi1>
  %zero = graph.constant {value = dense<0.000000e+00> : tensor<1xf32>} : tensor<1xf32>
  %ninf = graph.constant {value = dense<"0x000080FF"> : tensor<1xf32>} : tensor<1xf32>
  %allowed = graph.and(%tri, %pad) : (tensor<1x1x4x4xi1>, tensor<1x1x1x4xi1>) -> tensor<1x1x4x4xi1>
  %bias = graph.where(%allowed, %zero, %ninf) : (tensor<1x1x4x4xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %kt = graph.transpose(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = graph.matmul(%q, %kt) : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %m = graph.add(%s, %bias) : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = graph.softmax(%m) {axis = 3 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %nan = graph.is_nan(%p) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi1>
  %p0 = graph.where(%nan, %zero, %p) : (tensor<1x2x4x4xi1>, tensor<1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = graph.matmul(%p0, %v) : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @gpt2_attention(
// CHECK:         %[[PAD:.*]] = graph.where(%pad, %zero, %ninf) : (tensor<1x1x1x4xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.attention(%q, %k, %v, %[[PAD]]) {scale = 1.000000e+00 : f32, zero_nan_rows, causal_offset = 0 : i64}
// CHECK-NOT:     graph.softmax
// CHECK-NOT:     graph.is_nan

// -----

// Negative: a triangle that is not causal (key j <= i + 1, except one entry) stays a mask,
// and a finite fill (torch.finfo.min) is no -inf: a row with no key left would average V.
func.func @not_causal(%q: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %odd = graph.constant {value = dense<[[[[true, true, false, false], [true, true, true, false], [true, false, true, true], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>} : tensor<1x1x4x4xi1>
  %tri = graph.constant {value = dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>} : tensor<1x1x4x4xi1>
  %zero = graph.constant {value = dense<0.000000e+00> : tensor<1xf32>} : tensor<1xf32>
  %ninf = graph.constant {value = dense<"0x000080FF"> : tensor<1xf32>} : tensor<1xf32>
  %min = graph.constant {value = dense<-3.40282347E+38> : tensor<1xf32>} : tensor<1xf32>
  %b1 = graph.where(%odd, %zero, %ninf) : (tensor<1x1x4x4xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %b2 = graph.where(%tri, %zero, %min) : (tensor<1x1x4x4xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
  %o1 = graph.attention(%q, %q, %v, %b1) {scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
  %o2 = graph.attention(%q, %q, %v, %b2) {scale = 1.000000e+00 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return %o1, %o2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @not_causal(
// CHECK-NOT:     causal_offset
// CHECK:         graph.attention(%q, %q, %v, %b1) {scale = 1.000000e+00 : f32}
// CHECK-NEXT:    graph.attention(%q, %q, %v, %b2) {scale = 1.000000e+00 : f32}
