// RUN: onnxc-opt %s -p move-quant-dequant --split-input-file | filecheck %s

// DQ -> MaxPool / Reshape / Transpose -> Q with the same parameters: the op on the integers.
func.func @moves(%x: tensor<1x2x4x4xui8>) -> (tensor<1x2x2x2xui8>, tensor<2x16xui8>, tensor<1x4x4x2xui8>) {
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32>
  %1 = graph.max_pool(%0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %2 = graph.quantize_linear(%1) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xui8>
  %3 = graph.reshape(%0) : (tensor<1x2x4x4xf32>) -> tensor<2x16xf32>
  %4 = graph.quantize_linear(%3) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<2x16xf32>) -> tensor<2x16xui8>
  %5 = graph.transpose(%0) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x4x2xf32>
  %6 = graph.quantize_linear(%5) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xui8>
  func.return %2, %4, %6 : tensor<1x2x2x2xui8>, tensor<2x16xui8>, tensor<1x4x4x2xui8>
}
// CHECK-LABEL: func.func @moves(
// CHECK-NEXT:    %0 = graph.max_pool(%x) {{.*}} : (tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xui8>
// CHECK-NEXT:    %1 = graph.reshape(%x) : (tensor<1x2x4x4xui8>) -> tensor<2x16xui8>
// CHECK-NEXT:    %2 = graph.transpose(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x4x4xui8>) -> tensor<1x4x4x2xui8>
// CHECK-NEXT:    func.return %0, %1, %2

// -----

// Concat of DQs that all have the Q's parameters.
func.func @concat(%a: tensor<1x2xi8>, %b: tensor<1x3xi8>) -> tensor<1x5xi8> {
  %0 = graph.dequantize_linear(%a) {scale = 2.500000e-01 : f32, zero_point = -3 : i64} : (tensor<1x2xi8>) -> tensor<1x2xf32>
  %1 = graph.dequantize_linear(%b) {scale = 2.500000e-01 : f32, zero_point = -3 : i64} : (tensor<1x3xi8>) -> tensor<1x3xf32>
  %2 = graph.concat(%0, %1) {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  %3 = graph.quantize_linear(%2) {scale = 2.500000e-01 : f32, zero_point = -3 : i64} : (tensor<1x5xf32>) -> tensor<1x5xi8>
  func.return %3 : tensor<1x5xi8>
}
// CHECK-LABEL: func.func @concat(
// CHECK-NEXT:    %0 = graph.concat(%a, %b) {axis = 1 : i64} : (tensor<1x2xi8>, tensor<1x3xi8>) -> tensor<1x5xi8>
// CHECK-NEXT:    func.return %0

// -----

// Negative: different scale or zero point (a requantization), a per-axis DQ, a float op
// result with a second user, and a concat input of other parameters stay as they are.
func.func @kept(%x: tensor<2x4xui8>, %b: tensor<2x4xui8>) -> (tensor<8xui8>, tensor<8xui8>, tensor<4x2xui8>, tensor<4x2xf32>, tensor<2x8xui8>) {
  %0 = graph.dequantize_linear(%x) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<2x4xui8>) -> tensor<2x4xf32>
  %1 = graph.reshape(%0) : (tensor<2x4xf32>) -> tensor<8xf32>
  %2 = graph.quantize_linear(%1) {scale = 1.000000e-01 : f32, zero_point = 128 : i64} : (tensor<8xf32>) -> tensor<8xui8>
  %3 = graph.dequantize_linear(%x) {scale = dense<[5.000000e-02, 5.000000e-02]> : tensor<2xf32>, zero_point = dense<128> : tensor<2xi32>, axis = 0 : i64} : (tensor<2x4xui8>) -> tensor<2x4xf32>
  %4 = graph.reshape(%3) : (tensor<2x4xf32>) -> tensor<8xf32>
  %5 = graph.quantize_linear(%4) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<8xf32>) -> tensor<8xui8>
  %6 = graph.transpose(%0) {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %7 = graph.quantize_linear(%6) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<4x2xf32>) -> tensor<4x2xui8>
  %8 = graph.dequantize_linear(%b) {scale = 5.000000e-02 : f32, zero_point = 127 : i64} : (tensor<2x4xui8>) -> tensor<2x4xf32>
  %9 = graph.concat(%0, %8) {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %10 = graph.quantize_linear(%9) {scale = 5.000000e-02 : f32, zero_point = 128 : i64} : (tensor<2x8xf32>) -> tensor<2x8xui8>
  func.return %2, %5, %7, %6, %10 : tensor<8xui8>, tensor<8xui8>, tensor<4x2xui8>, tensor<4x2xf32>, tensor<2x8xui8>
}
// CHECK-LABEL: func.func @kept(
// CHECK-NOT:     (tensor<2x4xui8>) -> tensor<8xui8>
// CHECK-NOT:     (tensor<2x4xui8>) -> tensor<4x2xui8>
// CHECK-NOT:     (tensor<2x4xui8>, tensor<2x4xui8>) -> tensor<2x8xui8>
// CHECK:         func.return

// -----

// A negative scale makes the (de)quantization decreasing: max of the reals is the min of
// the integers, so MaxPool stays in float; a Reshape only moves values and still moves.
func.func @negative_scale(%x: tensor<1x2x4x4xi8>) -> (tensor<1x2x2x2xi8>, tensor<2x16xi8>) {
  %0 = graph.dequantize_linear(%x) {scale = -5.000000e-02 : f32, zero_point = 3 : i64} : (tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xf32>
  %1 = graph.max_pool(%0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %2 = graph.quantize_linear(%1) {scale = -5.000000e-02 : f32, zero_point = 3 : i64} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xi8>
  %3 = graph.reshape(%0) : (tensor<1x2x4x4xf32>) -> tensor<2x16xf32>
  %4 = graph.quantize_linear(%3) {scale = -5.000000e-02 : f32, zero_point = 3 : i64} : (tensor<2x16xf32>) -> tensor<2x16xi8>
  func.return %2, %4 : tensor<1x2x2x2xi8>, tensor<2x16xi8>
}
// CHECK-LABEL: func.func @negative_scale(
// CHECK-NEXT:    %0 = graph.dequantize_linear(%x) {scale = -5.000000e-02 : f32, zero_point = 3 : i64}
// CHECK-NEXT:    %1 = graph.max_pool(%0) {{.*}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %2 = graph.quantize_linear(%1)
// CHECK-NEXT:    %3 = graph.reshape(%x) : (tensor<1x2x4x4xi8>) -> tensor<2x16xi8>
// CHECK-NEXT:    func.return %2, %3
