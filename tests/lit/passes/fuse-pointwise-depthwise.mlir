// RUN: onnxc-opt %s -p "fuse-pointwise-depthwise{min-bytes=1024}" --split-input-file | filecheck %s
// RUN: onnxc-opt %s -p fuse-pointwise-depthwise --split-input-file | filecheck %s --check-prefix=SMALL

// A MobileNet expansion: 1x1 conv + clip, then a 3x3 stride-2 depthwise conv + clip, in
// NHWC. The pair becomes one op; the 1x1 conv's epilogue moves to pointwise_activation*.
func.func @expand_depthwise(%x: tensor<1x4x8x8xf32, #layout.spec<"NHWC">>) -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">> {
  %w1 = graph.constant {value = dense<0.5> : tensor<8x4x1x1xf32>} : tensor<8x4x1x1xf32>
  %b1 = graph.constant {value = dense<0.1> : tensor<8xf32>} : tensor<8xf32>
  %w2 = graph.constant {value = dense<0.25> : tensor<8x1x3x3xf32>} : tensor<8x1x3x3xf32>
  %b2 = graph.constant {value = dense<0.2> : tensor<8xf32>} : tensor<8xf32>
  %e = graph.conv(%x, %w1, %b1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "clip", activation_alpha = 0.0 : f32, activation_beta = 6.0 : f32} : (tensor<1x4x8x8xf32, #layout.spec<"NHWC">>, tensor<8x4x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32, #layout.spec<"NHWC">>
  %y = graph.conv(%e, %w2, %b2) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, activation = "relu"} : (tensor<1x8x8x8xf32, #layout.spec<"NHWC">>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
  func.return %y : tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @expand_depthwise(
// CHECK-NOT:     graph.conv(
// CHECK:         %[[Y:.*]] = graph.pointwise_depthwise(%x, %w1, %b1, %w2, %b2) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, activation = "relu", pointwise_activation = "clip", pointwise_activation_alpha = 0.000000e+00 : f32, pointwise_activation_beta = 6.000000e+00 : f32} : (tensor<1x4x8x8xf32, #layout.spec<"NHWC">>, tensor<8x4x1x1xf32>, tensor<8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    func.return %[[Y]]
// The expanded tensor (2 KiB) is below the default size: nothing fires.
// SMALL-LABEL: func.func @expand_depthwise(
// SMALL:         graph.conv(%x, %w1, %b1)
// SMALL:         graph.conv(%e, %w2, %b2)
// SMALL-NOT:     graph.pointwise_depthwise

// -----

// The expanded tensor has a second reader: it must be written anyway, nothing fires.
func.func @expansion_used_twice(%x: tensor<1x4x8x8xf32, #layout.spec<"NHWC">>) -> (tensor<1x8x8x8xf32, #layout.spec<"NHWC">>, tensor<1x8x8x8xf32, #layout.spec<"NHWC">>) {
  %w1 = graph.constant {value = dense<0.5> : tensor<8x4x1x1xf32>} : tensor<8x4x1x1xf32>
  %b1 = graph.constant {value = dense<0.1> : tensor<8xf32>} : tensor<8xf32>
  %w2 = graph.constant {value = dense<0.25> : tensor<8x1x3x3xf32>} : tensor<8x1x3x3xf32>
  %b2 = graph.constant {value = dense<0.2> : tensor<8xf32>} : tensor<8xf32>
  %e = graph.conv(%x, %w1, %b1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32, #layout.spec<"NHWC">>, tensor<8x4x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32, #layout.spec<"NHWC">>
  %y = graph.conv(%e, %w2, %b2) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x8x8xf32, #layout.spec<"NHWC">>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32, #layout.spec<"NHWC">>
  func.return %y, %e : tensor<1x8x8x8xf32, #layout.spec<"NHWC">>, tensor<1x8x8x8xf32, #layout.spec<"NHWC">>
}
// CHECK-LABEL: func.func @expansion_used_twice(
// CHECK:         graph.conv(%x, %w1, %b1)
// CHECK:         graph.conv(%e, %w2, %b2)
// CHECK-NOT:     graph.pointwise_depthwise

// -----

// A dilated depthwise conv (DeepLab's atrous blocks) and a plain-layout pair are left alone.
func.func @dilated_and_plain(%x: tensor<1x4x8x8xf32, #layout.spec<"NHWC">>, %p: tensor<1x4x8x8xf32>) -> (tensor<1x8x8x8xf32, #layout.spec<"NHWC">>, tensor<1x8x8x8xf32>) {
  %w1 = graph.constant {value = dense<0.5> : tensor<8x4x1x1xf32>} : tensor<8x4x1x1xf32>
  %b1 = graph.constant {value = dense<0.1> : tensor<8xf32>} : tensor<8xf32>
  %w2 = graph.constant {value = dense<0.25> : tensor<8x1x3x3xf32>} : tensor<8x1x3x3xf32>
  %b2 = graph.constant {value = dense<0.2> : tensor<8xf32>} : tensor<8xf32>
  %e = graph.conv(%x, %w1, %b1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32, #layout.spec<"NHWC">>, tensor<8x4x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32, #layout.spec<"NHWC">>
  %y = graph.conv(%e, %w2, %b2) {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 8 : i64} : (tensor<1x8x8x8xf32, #layout.spec<"NHWC">>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32, #layout.spec<"NHWC">>
  %f = graph.conv(%p, %w1, %b1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %z = graph.conv(%f, %w2, %b2) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  func.return %y, %z : tensor<1x8x8x8xf32, #layout.spec<"NHWC">>, tensor<1x8x8x8xf32>
}
// CHECK-LABEL: func.func @dilated_and_plain(
// CHECK-COUNT-4: graph.conv(
// CHECK-NOT:     graph.pointwise_depthwise
