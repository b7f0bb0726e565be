// RUN: onnxc-opt %s -p attention-operand-views --split-input-file | filecheck %s

// BERT as torch exports it: one QKV product split in three, each part reshaped to
// [B, S, H, D], Q and K scaled, transposed to [B, H, S, D]. Each operand becomes one strided
// view of the product (K 16 and V 32 elements into each row), the factors the scale.
func.func @bert_qkv(%qkv: tensor<8x48xf32>, %mask: tensor<1x1x1x8xf32>) -> tensor<1x2x8x8xf32> {
  %q, %k, %v = graph.split(%qkv) {axis = 1 : i64} : (tensor<8x48xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  %q4 = graph.reshape(%q) : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %k4 = graph.reshape(%k) : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %v4 = graph.reshape(%v) : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %qs = graph.mul_scalar(%q4) {scalar = 5.000000e-01 : f64} : (tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32>
  %ks = graph.mul_scalar(%k4) {scalar = 2.500000e-01 : f64} : (tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32>
  %qt = graph.transpose(%qs) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %kt = graph.transpose(%ks) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %vt = graph.transpose(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %o = graph.attention(%qt, %kt, %vt, %mask) {scale = 1.000000e+00 : f32} : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %o : tensor<1x2x8x8xf32>
}
// CHECK-LABEL: func.func @bert_qkv(
// CHECK-NEXT:    %[[Q:.*]] = graph.as_strided(%qkv) {offset = 0 : i64, strides = array<i64: 384, 8, 48, 1>} : (tensor<8x48xf32>) -> tensor<1x2x8x8xf32>
// CHECK-NEXT:    %[[K:.*]] = graph.as_strided(%qkv) {offset = 16 : i64, strides = array<i64: 384, 8, 48, 1>}
// CHECK-NEXT:    %[[V:.*]] = graph.as_strided(%qkv) {offset = 32 : i64, strides = array<i64: 384, 8, 48, 1>}
// CHECK-NEXT:    %{{.*}} = graph.attention(%[[Q]], %[[K]], %[[V]], %mask) {scale = 1.250000e-01 : f32}
// CHECK-NEXT:    func.return

// -----

// ViT / Swin: Q, K and V stacked on a new leading axis and gathered with constant indices
// (a scalar index drops the axis); K scaled by a [1, 1, 1] constant that adds a unit axis.
func.func @stacked(%qkv: tensor<5x3x2x4xf32>) -> tensor<1x2x5x4xf32> {
  %s = graph.transpose(%qkv) {perm = array<i64: 1, 2, 0, 3>} : (tensor<5x3x2x4xf32>) -> tensor<3x2x5x4xf32>
  %i0 = graph.constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %i1 = graph.constant {value = dense<1> : tensor<i64>} : tensor<i64>
  %i2 = graph.constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %c = graph.constant {value = dense<5.000000e-01> : tensor<1x1x1x1xf32>} : tensor<1x1x1x1xf32>
  %q = graph.gather(%s, %i0) {axis = 0 : i64} : (tensor<3x2x5x4xf32>, tensor<i64>) -> tensor<2x5x4xf32>
  %k = graph.gather(%s, %i1) {axis = 0 : i64} : (tensor<3x2x5x4xf32>, tensor<i64>) -> tensor<2x5x4xf32>
  %v = graph.gather(%s, %i2) {axis = 0 : i64} : (tensor<3x2x5x4xf32>, tensor<i64>) -> tensor<2x5x4xf32>
  %q4 = graph.reshape(%q) : (tensor<2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %k4 = graph.mul(%k, %c) : (tensor<2x5x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x2x5x4xf32>
  %v4 = graph.reshape(%v) : (tensor<2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %o = graph.attention(%q4, %k4, %v4) {scale = 1.000000e+00 : f32} : (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  func.return %o : tensor<1x2x5x4xf32>
}
// CHECK-LABEL: func.func @stacked(
// CHECK:         %[[Q:.*]] = graph.as_strided(%qkv) {offset = 0 : i64, strides = array<i64: 8, 4, 24, 1>} : (tensor<5x3x2x4xf32>) -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    %[[K:.*]] = graph.as_strided(%qkv) {offset = 8 : i64, strides = array<i64: 8, 4, 24, 1>}
// CHECK-NEXT:    %[[V:.*]] = graph.as_strided(%qkv) {offset = 16 : i64, strides = array<i64: 8, 4, 24, 1>}
// CHECK-NEXT:    %{{.*}} = graph.attention(%[[Q]], %[[K]], %[[V]]) {scale = 5.000000e-01 : f32}
// CHECK-NOT:     graph.gather

// -----

// Negative: operands that are views already (reshapes of the arguments) stay as they are, and
// so does a reshape that merges two transposed axes (the transpose must copy): the
// attention then reads that copy.
func.func @already_views(%x: tensor<4x8xf32>, %y: tensor<2x3x8xf32>) -> tensor<1x6x8xf32> {
  %q = graph.reshape(%x) : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  %t = graph.transpose(%y) {perm = array<i64: 1, 0, 2>} : (tensor<2x3x8xf32>) -> tensor<3x2x8xf32>
  %k = graph.reshape(%t) : (tensor<3x2x8xf32>) -> tensor<1x6x8xf32>
  %o = graph.attention(%k, %q, %q) {scale = 1.000000e+00 : f32} : (tensor<1x6x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x6x8xf32>
  func.return %o : tensor<1x6x8xf32>
}
// CHECK-LABEL: func.func @already_views(
// CHECK-NOT:     graph.as_strided
// CHECK:         graph.transpose
// CHECK:         graph.attention(%k, %q, %q) {scale = 1.000000e+00 : f32}

// -----

// Negative: V is never scaled into the scores (its factor is no score's), and f64 attention
// keeps its operands (the pass handles f32, the kernel's vector form).
func.func @scaled_value(%x: tensor<2x4x8xf32>, %z: tensor<2x4x8xf64>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf64>) {
  %v = graph.mul_scalar(%x) {scalar = 2.000000e+00 : f64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = graph.attention(%x, %x, %v) {scale = 1.000000e+00 : f32} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %zt = graph.transpose(%z) {perm = array<i64: 0, 1, 2>} : (tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
  %p = graph.attention(%zt, %z, %z) {scale = 1.000000e+00 : f64} : (tensor<2x4x8xf64>, tensor<2x4x8xf64>, tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
  func.return %o, %p : tensor<2x4x8xf32>, tensor<2x4x8xf64>
}
// CHECK-LABEL: func.func @scaled_value(
// CHECK-NOT:     graph.as_strided
// CHECK:         graph.attention(%x, %x, %v) {scale = 1.000000e+00 : f32}
// CHECK:         graph.transpose

// -----

// The Transpose back to [B, S, H, D] after the attention (its only reader) becomes the
// attention's output_perm; a Transpose of a result read twice stays.
func.func @result_in_place(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x2x8x4xf32>) {
  %o = graph.attention(%q, %k, %k) {scale = 1.000000e+00 : f32} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %t = graph.transpose(%o) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x4xf32>) -> tensor<1x8x2x4xf32>
  %p = graph.attention(%k, %q, %q) {scale = 1.000000e+00 : f32} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %u = graph.transpose(%p) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x4xf32>) -> tensor<1x8x2x4xf32>
  func.return %t, %u, %p : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x2x8x4xf32>
}
// CHECK-LABEL: func.func @result_in_place(
// CHECK-NEXT:    %{{.*}} = graph.attention(%q, %k, %k) {scale = 1.000000e+00 : f32, output_perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x8x2x4xf32>
// CHECK-NEXT:    %p = graph.attention(%k, %q, %q) {scale = 1.000000e+00 : f32} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    %u = graph.transpose(%p)
