// RUN: onnxc-opt %s -p "assign-layout{vector-bits=512}" --split-input-file | filecheck %s
// RUN: onnxc-opt %s -p "assign-layout{vector-bits=64}" --split-input-file | filecheck %s --check-prefix=SCALAR

// A rank-4 qlinear_conv with a constant weight runs NHWC (weight and bias stay plain), and
// NHWC flows on through a per-tensor DequantizeLinear and the float ops after it.
func.func @qlinear_block(%x: tensor<1x8x6x6xui8>) -> tensor<1x16x6x6xf32> {
  %w = graph.constant {value = dense<3> : tensor<16x8x3x3xsi8>} : tensor<16x8x3x3xsi8>
  %b = graph.constant {value = dense<7> : tensor<16xi32>} : tensor<16xi32>
  %0 = graph.qlinear_conv(%x, %w, %b) {input_zero_point = 128 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.01>, output_zero_point = 0 : i64, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xui8>, tensor<16x8x3x3xsi8>, tensor<16xi32>) -> tensor<1x16x6x6xui8>
  %1 = graph.dequantize_linear(%0) {scale = 0.5 : f32, zero_point = 0 : ui8} : (tensor<1x16x6x6xui8>) -> tensor<1x16x6x6xf32>
  %2 = graph.relu(%1) : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  func.return %2 : tensor<1x16x6x6xf32>
}
// CHECK-LABEL: func.func @qlinear_block(
// CHECK:         %[[IN:.*]] = layout.convert %x : tensor<1x8x6x6xui8> -> tensor<1x8x6x6xui8, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[C:.*]] = graph.qlinear_conv(%[[IN]], %w, %b) {{.*}} : (tensor<1x8x6x6xui8, #layout.spec<"NHWC">>, tensor<16x8x3x3xsi8>, tensor<16xi32>) -> tensor<1x16x6x6xui8, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[D:.*]] = graph.dequantize_linear(%[[C]]) {{.*}} -> tensor<1x16x6x6xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[R:.*]] = graph.relu(%[[D]]) {{.*}} -> tensor<1x16x6x6xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[OUT:.*]] = layout.convert %[[R]] : tensor<1x16x6x6xf32, #layout.spec<"NHWC">> -> tensor<1x16x6x6xf32>
// CHECK-NEXT:    func.return %[[OUT]]
// SCALAR-LABEL: func.func @qlinear_block(
// SCALAR-NOT:    layout
// SCALAR:        func.return

// -----

// A qlinear_conv whose weight is not a constant stays plain (no compile-time packing).
func.func @qlinear_dynamic_weight(%x: tensor<1x4x5x5xui8>, %w: tensor<4x4x1x1xsi8>) -> tensor<1x4x5x5xi32> {
  %0 = graph.qlinear_conv(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x5x5xui8>, tensor<4x4x1x1xsi8>) -> tensor<1x4x5x5xi32>
  func.return %0 : tensor<1x4x5x5xi32>
}
// CHECK-LABEL: func.func @qlinear_dynamic_weight(
// CHECK-NOT:     layout
// CHECK:         func.return

// -----

// A per-axis DequantizeLinear reads its scales along a logical axis: it stays plain.
func.func @per_axis_dequantize(%x: tensor<1x4x5x5xui8>) -> tensor<1x4x5x5xf32> {
  %w = graph.constant {value = dense<3> : tensor<4x4x1x1xsi8>} : tensor<4x4x1x1xsi8>
  %0 = graph.qlinear_conv(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.01>, output_zero_point = 0 : i64, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x5x5xui8>, tensor<4x4x1x1xsi8>) -> tensor<1x4x5x5xui8>
  %1 = graph.dequantize_linear(%0) {scale = dense<[0.5, 0.25, 1.0, 2.0]> : tensor<4xf32>, zero_point = dense<0> : tensor<4xui8>, axis = 1 : i64} : (tensor<1x4x5x5xui8>) -> tensor<1x4x5x5xf32>
  func.return %1 : tensor<1x4x5x5xf32>
}
// CHECK-LABEL: func.func @per_axis_dequantize(
// CHECK:         %[[C:.*]] = graph.qlinear_conv({{.*}} -> tensor<1x4x5x5xui8, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[P:.*]] = layout.convert %[[C]] : tensor<1x4x5x5xui8, #layout.spec<"NHWC">> -> tensor<1x4x5x5xui8>
// CHECK-NEXT:    graph.dequantize_linear(%[[P]]) {{.*}} -> tensor<1x4x5x5xf32>

// -----

// A ui8 MaxPool between two qlinear_convs has an NHWC kernel (an integer max): it stays NHWC,
// with no conversion around it.
func.func @qlinear_max_pool(%x: tensor<1x4x8x8xui8>) -> tensor<1x4x4x4xui8> {
  %w = graph.constant {value = dense<3> : tensor<4x4x1x1xsi8>} : tensor<4x4x1x1xsi8>
  %0 = graph.qlinear_conv(%x, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.01>, output_zero_point = 0 : i64, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xui8>, tensor<4x4x1x1xsi8>) -> tensor<1x4x8x8xui8>
  %1 = graph.max_pool(%0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x8x8xui8>) -> tensor<1x4x4x4xui8>
  %2 = graph.qlinear_conv(%1, %w) {input_zero_point = 0 : i64, weight_zero_point = array<i64: 0>, output_scale = array<f32: 0.01>, output_zero_point = 0 : i64, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xui8>, tensor<4x4x1x1xsi8>) -> tensor<1x4x4x4xui8>
  func.return %2 : tensor<1x4x4x4xui8>
}
// CHECK-LABEL: func.func @qlinear_max_pool(
// CHECK:         %[[C:.*]] = graph.qlinear_conv({{.*}} -> tensor<1x4x8x8xui8, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[P:.*]] = graph.max_pool(%[[C]]) {{.*}} : (tensor<1x4x8x8xui8, #layout.spec<"NHWC">>) -> tensor<1x4x4x4xui8, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[D:.*]] = graph.qlinear_conv(%[[P]], {{.*}} -> tensor<1x4x4x4xui8, #layout.spec<"NHWC">>
// CHECK-NEXT:    layout.convert %[[D]]
