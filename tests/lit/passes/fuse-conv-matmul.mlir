// RUN: onnxc-opt %s -p fuse-conv-matmul --split-input-file | filecheck %s

// A 1x1 conv (a linear map on channels) after a 3x3 conv composes into one conv:
// W = M @ W1 (3 -> 2 channels), b = M @ b1 = [6, 4].
func.func @conv_then_pointwise(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w1 = graph.constant {value = dense<1.0> : tensor<3x1x3x3xf32>} : tensor<3x1x3x3xf32>
  %b1 = graph.constant {value = dense<[1.0, 2.0, 5.0]> : tensor<3xf32>} : tensor<3xf32>
  %m = graph.constant {value = dense<[[[[1.0]], [[0.0]], [[1.0]]], [[[0.0]], [[2.0]], [[0.0]]]]> : tensor<2x3x1x1xf32>} : tensor<2x3x1x1xf32>
  %c = graph.conv(%x, %w1, %b1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<3x1x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  %y = graph.conv(%c, %m) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x2x2xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @conv_then_pointwise(
// CHECK-DAG:     %[[W:.*]] = graph.constant {{.*}} : tensor<2x1x3x3xf32>
// CHECK-DAG:     %[[B:.*]] = graph.constant {value = dense<[6.000000e+00, 4.000000e+00]> : tensor<2xf32>}
// CHECK:         %[[Y:.*]] = graph.conv(%x, %[[W]], %[[B]]) {{.*}} -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %[[Y]]

// -----

// The second conv is 3x3, not a per-pixel linear map: nothing fires.
func.func @conv_then_3x3(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w1 = graph.constant {value = dense<1.0> : tensor<3x1x1x1xf32>} : tensor<3x1x1x1xf32>
  %m = graph.constant {value = dense<1.0> : tensor<2x3x3x3xf32>} : tensor<2x3x3x3xf32>
  %c = graph.conv(%x, %w1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<3x1x1x1xf32>) -> tensor<1x3x4x4xf32>
  %y = graph.conv(%c, %m) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @conv_then_3x3(
// CHECK:         graph.conv(%x, %w1)
// CHECK:         graph.conv(%c, %m)

// -----

// Widening 1x1 (4 -> 64 channels) would make the composed conv more expensive.
func.func @conv_then_widening(%x: tensor<1x4x4x4xf32>) -> tensor<1x64x2x2xf32> {
  %w1 = graph.constant {value = dense<1.0> : tensor<4x4x3x3xf32>} : tensor<4x4x3x3xf32>
  %m = graph.constant {value = dense<1.0> : tensor<64x4x1x1xf32>} : tensor<64x4x1x1xf32>
  %c = graph.conv(%x, %w1) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x2x2xf32>
  %y = graph.conv(%c, %m) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<64x4x1x1xf32>) -> tensor<1x64x2x2xf32>
  func.return %y : tensor<1x64x2x2xf32>
}
// CHECK-LABEL: func.func @conv_then_widening(
// CHECK:         graph.conv(%x, %w1)
// CHECK:         graph.conv(%c, %m)
