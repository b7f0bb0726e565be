// RUN: onnxc-opt %s -p conv-after-global-pool-to-gemm --split-input-file | filecheck %s

// A 1x1 conv on the N x C x 1 x 1 output of a global pool is a fully connected layer.
func.func @head(%x: tensor<2x4x5x5xf32>, %w: tensor<3x4x1x1xf32>, %b: tensor<3xf32>) -> tensor<2x3x1x1xf32> {
  %p = graph.global_average_pool(%x) : (tensor<2x4x5x5xf32>) -> tensor<2x4x1x1xf32>
  %y = graph.conv(%p, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "relu"} : (tensor<2x4x1x1xf32>, tensor<3x4x1x1xf32>, tensor<3xf32>) -> tensor<2x3x1x1xf32>
  func.return %y : tensor<2x3x1x1xf32>
}
// CHECK-LABEL: func.func @head(
// CHECK:         %[[X:.*]] = graph.reshape(%p) : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.reshape(%w) : (tensor<3x4x1x1xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.gemm(%[[X]], %[[W]], %b) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64, activation = "relu"}
// CHECK-NEXT:    %y = graph.reshape(%[[G]]) : (tensor<2x3xf32>) -> tensor<2x3x1x1xf32>

// -----

// A padded 1x1 conv on a 1x1 plane (3x3 output), and a grouped one, stay convs.
func.func @keep(%x: tensor<1x4x1x1xf32>, %w: tensor<3x4x1x1xf32>, %v: tensor<4x2x1x1xf32>) -> (tensor<1x3x3x3xf32>, tensor<1x4x1x1xf32>) {
  %0 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x1x1xf32>, tensor<3x4x1x1xf32>) -> tensor<1x3x3x3xf32>
  %1 = graph.conv(%x, %v) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x1x1xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x1x1xf32>
  func.return %0, %1 : tensor<1x3x3x3xf32>, tensor<1x4x1x1xf32>
}
// CHECK-LABEL: func.func @keep(
// CHECK-NOT:     graph.gemm
// CHECK:         graph.conv
// CHECK:         graph.conv
