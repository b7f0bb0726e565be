// RUN: onnxc-opt %s -p fuse-qdq-linear --split-input-file | filecheck %s

// DQ -> Conv(DQ(W) per channel, DQ(B) i32) -> Relu -> Q: one qlinear_conv on the integers;
// output_scale[m] = x_scale * w_scale[m] / y_scale, the Relu is output_min = y_zero_point.
func.func @conv_relu(%x: tensor<1x2x4x4xui8>) -> tensor<1x3x4x4xui8> {
  %w = graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1xi8>
  %b = graph.constant {value = dense<[7, -8, 9]> : tensor<3xi32>} : tensor<3xi32>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 128 : i64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32>
  %1 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, 1.250000e-01, 6.250000e-02]> : tensor<3xf32>, zero_point = dense<0> : tensor<3xi32>, axis = 0 : i64} : (tensor<3x2x1x1xi8>) -> tensor<3x2x1x1xf32>
  %2 = graph.dequantize_linear(%b) {scale = dense<[1.250000e-01, 6.250000e-02, 3.125000e-02]> : tensor<3xf32>, zero_point = dense<0> : tensor<3xi32>, axis = 0 : i64} : (tensor<3xi32>) -> tensor<3xf32>
  %3 = graph.conv(%0, %1, %2) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %4 = graph.relu(%3) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %5 = graph.quantize_linear(%4) {scale = 2.500000e-01 : f32, zero_point = 10 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  func.return %5 : tensor<1x3x4x4xui8>
}
// CHECK-LABEL: func.func @conv_relu(
// CHECK:         %0 = graph.qlinear_conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 128 : i64, weight_zero_point = array<i64: 0, 0, 0>, output_scale = array<f32: 5.000000e-01, 2.500000e-01, 1.250000e-01>, output_zero_point = 10 : i64, output_min = 10 : i64} : (tensor<1x2x4x4xui8>, tensor<3x2x1x1xi8>, tensor<3xi32>) -> tensor<1x3x4x4xui8>
// CHECK-NEXT:    func.return %0

// -----

// No Q after the conv: the float form, output_scale = x_scale * w_scale.
func.func @conv_float(%x: tensor<1x2x4x4xi8>) -> tensor<1x3x4x4xf32> {
  %w = graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1xi8>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = -1 : i64} : (tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xf32>
  %1 = graph.dequantize_linear(%w) {scale = 2.500000e-01 : f32, zero_point = 3 : i64} : (tensor<3x2x1x1xi8>) -> tensor<3x2x1x1xf32>
  %2 = graph.conv(%0, %1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  func.return %2 : tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @conv_float(
// CHECK:         %0 = graph.qlinear_conv(%x, %w) {{{.*}}input_zero_point = -1 : i64, weight_zero_point = array<i64: 3>, output_scale = array<f32: 1.250000e-01>} : (tensor<1x2x4x4xi8>, tensor<3x2x1x1xi8>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    func.return %0

// -----

// Gemm with transB: the constant weight is transposed to [K, N], the [1, N] bias flattened;
// a Clip becomes the quantized bounds [Q(-1), Q(2)] = [-4 + 2, 8 + 2].
func.func @gemm_clip(%x: tensor<2x3xui8>) -> tensor<2x2xi8> {
  %w = graph.constant {value = dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>} : tensor<2x3xi8>
  %b = graph.constant {value = dense<[[100, -100]]> : tensor<1x2xi32>} : tensor<1x2xi32>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 0 : i64} : (tensor<2x3xui8>) -> tensor<2x3xf32>
  %1 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, 5.000000e-01]> : tensor<2xf32>, zero_point = dense<0> : tensor<2xi32>, axis = 0 : i64} : (tensor<2x3xi8>) -> tensor<2x3xf32>
  %2 = graph.dequantize_linear(%b) {scale = dense<[1.250000e-01, 2.500000e-01]> : tensor<2xf32>, zero_point = dense<0> : tensor<2xi32>, axis = 1 : i64} : (tensor<1x2xi32>) -> tensor<1x2xf32>
  %3 = graph.gemm(%0, %1, %2) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
  %4 = graph.clip(%3) {min = -1.000000e+00 : f32, max = 2.000000e+00 : f32} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %5 = graph.quantize_linear(%4) {scale = 2.500000e-01 : f32, zero_point = 2 : i64} : (tensor<2x2xf32>) -> tensor<2x2xi8>
  func.return %5 : tensor<2x2xi8>
}
// CHECK-LABEL: func.func @gemm_clip(
// CHECK-DAG:     %[[W:.*]] = graph.constant {value = dense<{{\[}}[1, -4], [2, -5], [3, -6]]> : tensor<3x2xi8>}
// CHECK-DAG:     %[[B:.*]] = graph.constant {value = dense<[100, -100]> : tensor<2xi32>}
// CHECK:         graph.qlinear_matmul(%x, %[[W]], %[[B]]) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0, 0>, output_scale = array<f32: 5.000000e-01, 1.000000e+00>, output_zero_point = 2 : i64, output_min = -2 : i64, output_max = 10 : i64} : (tensor<2x3xui8>, tensor<3x2xi8>, tensor<2xi32>) -> tensor<2x2xi8>
// CHECK-NOT:     graph.gemm

// -----

// MatMul of an N-D activation by a [K, N] weight quantized per column.
func.func @matmul(%x: tensor<2x4x3xui8>) -> tensor<2x4x2xui8> {
  %w = graph.constant {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>} : tensor<3x2xi8>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 7 : i64} : (tensor<2x4x3xui8>) -> tensor<2x4x3xf32>
  %1 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, 5.000000e-01]> : tensor<2xf32>, zero_point = dense<[1, -1]> : tensor<2xi32>, axis = 1 : i64} : (tensor<3x2xi8>) -> tensor<3x2xf32>
  %2 = graph.matmul(%0, %1) : (tensor<2x4x3xf32>, tensor<3x2xf32>) -> tensor<2x4x2xf32>
  %3 = graph.quantize_linear(%2) {scale = 1.250000e-01 : f32, zero_point = 0 : i64} : (tensor<2x4x2xf32>) -> tensor<2x4x2xui8>
  func.return %3 : tensor<2x4x2xui8>
}
// CHECK-LABEL: func.func @matmul(
// CHECK:         %0 = graph.qlinear_matmul(%x, %w) {input_zero_point = 7 : i64, weight_zero_point = array<i64: 1, -1>, output_scale = array<f32: 1.000000e+00, 2.000000e+00>, output_zero_point = 0 : i64} : (tensor<2x4x3xui8>, tensor<3x2xi8>) -> tensor<2x4x2xui8>
// CHECK-NEXT:    func.return %0

// -----

// Negative: a bias not in the accumulator's scale (it would have to be rounded), a weight
// that is not a constant, and a weight quantized along the wrong axis stay float.
func.func @not_fusable(%x: tensor<2x3xui8>, %v: tensor<3x2xi8>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %w = graph.constant {value = dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>} : tensor<3x2xi8>
  %b = graph.constant {value = dense<[1, 2]> : tensor<2xi32>} : tensor<2xi32>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 0 : i64} : (tensor<2x3xui8>) -> tensor<2x3xf32>
  %1 = graph.dequantize_linear(%w) {scale = 2.500000e-01 : f32, zero_point = 0 : i64} : (tensor<3x2xi8>) -> tensor<3x2xf32>
  %2 = graph.dequantize_linear(%b) {scale = 1.000000e-01 : f32, zero_point = 0 : i64} : (tensor<2xi32>) -> tensor<2xf32>
  %3 = graph.gemm(%0, %1, %2) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %4 = graph.dequantize_linear(%v) {scale = 2.500000e-01 : f32, zero_point = 0 : i64} : (tensor<3x2xi8>) -> tensor<3x2xf32>
  %5 = graph.matmul(%0, %4) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %6 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>, zero_point = dense<0> : tensor<3xi32>, axis = 0 : i64} : (tensor<3x2xi8>) -> tensor<3x2xf32>
  %7 = graph.matmul(%0, %6) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %3, %5, %7 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @not_fusable(
// CHECK-NOT:     graph.qlinear_matmul
// CHECK:         graph.gemm
// CHECK:         graph.matmul
// CHECK:         graph.matmul
// CHECK-NOT:     graph.qlinear_matmul

// -----

// Negative for the requantized form: the Relu has a second user, so the Q cannot take it;
// the conv still becomes the float form and the Relu and Q stay. A per-axis Q is not taken.
func.func @shared_relu(%x: tensor<1x2x4x4xui8>) -> (tensor<1x3x4x4xui8>, tensor<1x3x4x4xf32>) {
  %w = graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1xi8>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 128 : i64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32>
  %1 = graph.dequantize_linear(%w) {scale = 2.500000e-01 : f32, zero_point = 0 : i64} : (tensor<3x2x1x1xi8>) -> tensor<3x2x1x1xf32>
  %2 = graph.conv(%0, %1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %3 = graph.relu(%2) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %4 = graph.quantize_linear(%3) {scale = 2.500000e-01 : f32, zero_point = 10 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  func.return %4, %3 : tensor<1x3x4x4xui8>, tensor<1x3x4x4xf32>
}
// CHECK-LABEL: func.func @shared_relu(
// CHECK:         %0 = graph.qlinear_conv(%x, %w) {{.*}} -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %1 = graph.relu(%0)
// CHECK-NEXT:    %2 = graph.quantize_linear(%1)

// -----

// A negative y_scale makes Q decreasing: Relu (y >= 0) is q <= Q(0), output_max =
// y_zero_point; output_scale = x_scale * w_scale[m] / y_scale is negative.
func.func @conv_relu_negative_y_scale(%x: tensor<1x2x4x4xui8>) -> tensor<1x3x4x4xui8> {
  %w = graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1xi8>
  %b = graph.constant {value = dense<[7, -8, 9]> : tensor<3xi32>} : tensor<3xi32>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 128 : i64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32>
  %1 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, 1.250000e-01, 6.250000e-02]> : tensor<3xf32>, zero_point = dense<0> : tensor<3xi32>, axis = 0 : i64} : (tensor<3x2x1x1xi8>) -> tensor<3x2x1x1xf32>
  %2 = graph.dequantize_linear(%b) {scale = dense<[1.250000e-01, 6.250000e-02, 3.125000e-02]> : tensor<3xf32>, zero_point = dense<0> : tensor<3xi32>, axis = 0 : i64} : (tensor<3xi32>) -> tensor<3xf32>
  %3 = graph.conv(%0, %1, %2) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %4 = graph.relu(%3) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %5 = graph.quantize_linear(%4) {scale = -2.500000e-01 : f32, zero_point = 10 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  func.return %5 : tensor<1x3x4x4xui8>
}
// CHECK-LABEL: func.func @conv_relu_negative_y_scale(
// CHECK:         %0 = graph.qlinear_conv(%x, %w, %b) {{{.*}}input_zero_point = 128 : i64, weight_zero_point = array<i64: 0, 0, 0>, output_scale = array<f32: -5.000000e-01, -2.500000e-01, -1.250000e-01>, output_zero_point = 10 : i64, output_max = 10 : i64} : (tensor<1x2x4x4xui8>, tensor<3x2x1x1xi8>, tensor<3xi32>) -> tensor<1x3x4x4xui8>
// CHECK-NEXT:    func.return %0

// -----

// A negative weight scale (one channel) with a positive y_scale: that channel's
// output_scale is negative, the Relu stays output_min = y_zero_point (only y_scale orders
// the clamp).
func.func @conv_relu_negative_w_scale(%x: tensor<1x2x4x4xui8>) -> tensor<1x3x4x4xui8> {
  %w = graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1xi8>
  %b = graph.constant {value = dense<[7, -8, 9]> : tensor<3xi32>} : tensor<3xi32>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 128 : i64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32>
  %1 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, -1.250000e-01, 6.250000e-02]> : tensor<3xf32>, zero_point = dense<0> : tensor<3xi32>, axis = 0 : i64} : (tensor<3x2x1x1xi8>) -> tensor<3x2x1x1xf32>
  %2 = graph.dequantize_linear(%b) {scale = dense<[1.250000e-01, -6.250000e-02, 3.125000e-02]> : tensor<3xf32>, zero_point = dense<0> : tensor<3xi32>, axis = 0 : i64} : (tensor<3xi32>) -> tensor<3xf32>
  %3 = graph.conv(%0, %1, %2) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  %4 = graph.relu(%3) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %5 = graph.quantize_linear(%4) {scale = 2.500000e-01 : f32, zero_point = 10 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  func.return %5 : tensor<1x3x4x4xui8>
}
// CHECK-LABEL: func.func @conv_relu_negative_w_scale(
// CHECK:         %0 = graph.qlinear_conv(%x, %w, %b) {{{.*}}output_scale = array<f32: 5.000000e-01, -2.500000e-01, 1.250000e-01>, output_zero_point = 10 : i64, output_min = 10 : i64} : (tensor<1x2x4x4xui8>, tensor<3x2x1x1xi8>, tensor<3xi32>) -> tensor<1x3x4x4xui8>
// CHECK-NEXT:    func.return %0

// -----

// Clip with a negative y_scale: the bounds swap, [Q(2), Q(-1)] = [-8 + 2, 4 + 2].
func.func @gemm_clip_negative_y_scale(%x: tensor<2x3xui8>) -> tensor<2x2xi8> {
  %w = graph.constant {value = dense<[[1, 2, 3], [-4, -5, -6]]> : tensor<2x3xi8>} : tensor<2x3xi8>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 0 : i64} : (tensor<2x3xui8>) -> tensor<2x3xf32>
  %1 = graph.dequantize_linear(%w) {scale = dense<[2.500000e-01, 5.000000e-01]> : tensor<2xf32>, zero_point = dense<0> : tensor<2xi32>, axis = 0 : i64} : (tensor<2x3xi8>) -> tensor<2x3xf32>
  %2 = graph.gemm(%0, %1) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  %3 = graph.clip(%2) {min = -1.000000e+00 : f32, max = 2.000000e+00 : f32} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %4 = graph.quantize_linear(%3) {scale = -2.500000e-01 : f32, zero_point = 2 : i64} : (tensor<2x2xf32>) -> tensor<2x2xi8>
  func.return %4 : tensor<2x2xi8>
}
// CHECK-LABEL: func.func @gemm_clip_negative_y_scale(
// CHECK:         graph.qlinear_matmul(%x, %{{.*}}) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0, 0>, output_scale = array<f32: -5.000000e-01, -1.000000e+00>, output_zero_point = 2 : i64, output_min = -6 : i64, output_max = 6 : i64} : (tensor<2x3xui8>, tensor<3x2xi8>) -> tensor<2x2xi8>
// CHECK-NOT:     graph.gemm

// -----


// A residual block's tail: Q(relu(DQ(conv) + DQ(skip))) is one qlinear_conv_add; the sum's
// scales are the three quantizations' (conv result, skip, sum) and the
// Relu is sum_min = the Q's zero point.
func.func @residual_add_relu(%x: tensor<1x2x4x4xui8>, %skip: tensor<1x3x4x4xui8>) -> tensor<1x3x4x4xui8> {
  %w = graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1xi8>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 128 : i64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32>
  %1 = graph.dequantize_linear(%w) {scale = 2.500000e-01 : f32, zero_point = 0 : i64} : (tensor<3x2x1x1xi8>) -> tensor<3x2x1x1xf32>
  %2 = graph.conv(%0, %1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %3 = graph.quantize_linear(%2) {scale = 5.000000e-01 : f32, zero_point = 100 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  %4 = graph.dequantize_linear(%3) {scale = 5.000000e-01 : f32, zero_point = 100 : i64} : (tensor<1x3x4x4xui8>) -> tensor<1x3x4x4xf32>
  %5 = graph.dequantize_linear(%skip) {scale = 1.250000e-01 : f32, zero_point = 7 : i64} : (tensor<1x3x4x4xui8>) -> tensor<1x3x4x4xf32>
  %6 = graph.add(%4, %5) : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %7 = graph.relu(%6) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %8 = graph.quantize_linear(%7) {scale = 2.500000e-01 : f32, zero_point = 3 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  func.return %8 : tensor<1x3x4x4xui8>
}
// CHECK-LABEL: func.func @residual_add_relu(
// CHECK:         %0 = graph.qlinear_conv_add(%x, %w, %skip) {{{.*}}output_scale = array<f32: 2.500000e-01>, output_zero_point = 100 : i64, addend_zero_point = 7 : i64, sum_scales = array<f32: 5.000000e-01, 1.250000e-01, 2.500000e-01>, sum_zero_point = 3 : i64, sum_min = 3 : i64} : (tensor<1x2x4x4xui8>, tensor<3x2x1x1xi8>, tensor<1x3x4x4xui8>) -> tensor<1x3x4x4xui8>
// CHECK-NEXT:    func.return %0

// -----

// The conv's quantized result is also returned: it must be stored, so the sum stays apart.
func.func @residual_conv_result_used_twice(%x: tensor<1x2x4x4xui8>, %skip: tensor<1x3x4x4xui8>) -> (tensor<1x3x4x4xui8>, tensor<1x3x4x4xui8>) {
  %w = graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]], [[[5]], [[-6]]]]> : tensor<3x2x1x1xi8>} : tensor<3x2x1x1xi8>
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-01 : f32, zero_point = 128 : i64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32>
  %1 = graph.dequantize_linear(%w) {scale = 2.500000e-01 : f32, zero_point = 0 : i64} : (tensor<3x2x1x1xi8>) -> tensor<3x2x1x1xf32>
  %2 = graph.conv(%0, %1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %3 = graph.quantize_linear(%2) {scale = 5.000000e-01 : f32, zero_point = 100 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  %4 = graph.dequantize_linear(%3) {scale = 5.000000e-01 : f32, zero_point = 100 : i64} : (tensor<1x3x4x4xui8>) -> tensor<1x3x4x4xf32>
  %5 = graph.dequantize_linear(%skip) {scale = 1.250000e-01 : f32, zero_point = 7 : i64} : (tensor<1x3x4x4xui8>) -> tensor<1x3x4x4xf32>
  %6 = graph.add(%4, %5) : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %7 = graph.quantize_linear(%6) {scale = 2.500000e-01 : f32, zero_point = 3 : i64} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xui8>
  func.return %7, %3 : tensor<1x3x4x4xui8>, tensor<1x3x4x4xui8>
}
// CHECK-LABEL: func.func @residual_conv_result_used_twice(
// CHECK:         %0 = graph.qlinear_conv(%x, %w)
// CHECK:         %3 = graph.add(%1, %2)
// CHECK-NOT:     graph.qlinear_conv_add
// CHECK:         func.return %4, %0
