// RUN: onnxc-opt %s -p drop-padding-taps --split-input-file | filecheck %s

// A 3x3 conv with dilation 24 on a 14x14 map: every off-center tap reads only padding, so
// only the center tap is left (a 1x1 conv, no padding; the weights sliced at compile time).
func.func @aspp_branch(%x: tensor<1x2x14x14xf32>, %b: tensor<2xf32>) -> tensor<1x2x14x14xf32> {
  %w = graph.constant {value = dense<[[[[0.0, 0.1, 0.2], [0.3, 0.4, 0.5], [0.6, 0.7, 0.8]], [[0.9, 1.0, 1.1], [1.2, 1.3, 1.4], [1.5, 1.6, 1.7]]], [[[1.8, 1.9, 2.0], [2.1, 2.2, 2.3], [2.4, 2.5, 2.6]], [[2.7, 2.8, 2.9], [3.0, 3.1, 3.2], [3.3, 3.4, 3.5]]]]> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
  %y = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 24, 24, 24, 24>, dilations = array<i64: 24, 24>, group = 1 : i64} : (tensor<1x2x14x14xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x14x14xf32>
  func.return %y : tensor<1x2x14x14xf32>
}
// CHECK-LABEL: func.func @aspp_branch(
// CHECK:         %[[W:.*]] = graph.constant {value = dense<{{\[\[\[\[}}4.000000e-01]], {{\[\[}}1.300000e+00]]], {{\[\[\[}}2.200000e+00]], {{\[\[}}3.100000e+00]]]]> : tensor<2x2x1x1xf32>}
// CHECK-NEXT:    %y = graph.conv(%x, %[[W]], %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 24, 24>, group = 1 : i64} : (tensor<1x2x14x14xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x14x14xf32>

// -----

// Dilation 12 on 14 rows: every tap reads real rows for some outputs. Nothing to drop.
func.func @partly_live(%x: tensor<1x2x14x14xf32>) -> tensor<1x2x14x14xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
  %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 12, 12, 12, 12>, dilations = array<i64: 12, 12>, group = 1 : i64} : (tensor<1x2x14x14xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x14x14xf32>
  func.return %y : tensor<1x2x14x14xf32>
}
// CHECK-LABEL: func.func @partly_live(
// CHECK:         %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 12, 12, 12, 12>, dilations = array<i64: 12, 12>, group = 1 : i64} : (tensor<1x2x14x14xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x14x14xf32>

// -----

// Only the rows are cut: a 3x1 dilated kernel on a 2-row map keeps its middle row; the
// columns (no dilation) all stay.
func.func @rows_only(%x: tensor<1x1x2x5xf32>) -> tensor<1x1x2x5xf32> {
  %w = graph.constant {value = dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>} : tensor<1x1x3x3xf32>
  %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 2, 1, 2, 1>, dilations = array<i64: 2, 1>, group = 1 : i64} : (tensor<1x1x2x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x5xf32>
  func.return %y : tensor<1x1x2x5xf32>
}
// CHECK-LABEL: func.func @rows_only(
// CHECK:         %[[W:.*]] = graph.constant {value = dense<{{\[\[\[\[}}4.000000e+00, 5.000000e+00, 6.000000e+00]]]]> : tensor<1x1x1x3xf32>}
// CHECK-NEXT:    %y = graph.conv(%x, %[[W]]) {strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 2, 1>, group = 1 : i64}
