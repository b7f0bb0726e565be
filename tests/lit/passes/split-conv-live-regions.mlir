// RUN: onnxc-opt %s -p split-conv-live-regions --split-input-file | filecheck %s

// A 3x1 kernel with dilation 4 and pads 4 on 5 rows: row 0 sees kernel rows 1-2 (input rows
// 0 and 4), rows 1-3 only kernel row 1, row 4 kernel rows 0-1. Three unpadded region convs
// on the weights of their live taps (7 of 15 tap-rows of work), concatenated along H; a
// region that reads the whole input takes it without a slice.
func.func @dilated_column(%x: tensor<1x1x5x2xf32>) -> tensor<1x1x5x2xf32> {
  %w = graph.constant {value = dense<[[[[1.0], [2.0], [3.0]]]]> : tensor<1x1x3x1xf32>} : tensor<1x1x3x1xf32>
  %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 4, 0, 4, 0>, dilations = array<i64: 4, 1>, group = 1 : i64} : (tensor<1x1x5x2xf32>, tensor<1x1x3x1xf32>) -> tensor<1x1x5x2xf32>
  func.return %y : tensor<1x1x5x2xf32>
}
// CHECK-LABEL: func.func @dilated_column(
// CHECK-NEXT:    %0 = graph.constant {value = dense<{{\[\[\[\[}}2.000000e+00], [3.000000e+00]]]]> : tensor<1x1x2x1xf32>}
// CHECK-NEXT:    %1 = graph.constant {value = dense<2.000000e+00> : tensor<1x1x1x1xf32>}
// CHECK-NEXT:    %2 = graph.constant {value = dense<{{\[\[\[\[}}1.000000e+00], [2.000000e+00]]]]> : tensor<1x1x2x1xf32>}
// CHECK-NEXT:    %y = graph.conv(%x, %0) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 4, 1>, group = 1 : i64} : (tensor<1x1x5x2xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x1x2xf32>
// CHECK-NEXT:    %y_1 = graph.slice(%x) {starts = array<i64: 1, 0>, ends = array<i64: 4, 2>, axes = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<1x1x5x2xf32>) -> tensor<1x1x3x2xf32>
// CHECK-NEXT:    %y_2 = graph.conv(%y_1, %1) {{.*}} : (tensor<1x1x3x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x3x2xf32>
// CHECK-NEXT:    %y_3 = graph.conv(%x, %2) {{.*}} : (tensor<1x1x5x2xf32>, tensor<1x1x2x1xf32>) -> tensor<1x1x1x2xf32>
// CHECK-NEXT:    %y_4 = graph.concat(%y, %y_2, %y_3) {axis = 2 : i64} : (tensor<1x1x1x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x1x5x2xf32>
// CHECK-NEXT:    func.return %y_4

// -----

// Both axes: nine regions, concatenated along W within each band of rows, then along H;
// the bias and the epilogue go to every region.
func.func @dilated_square(%x: tensor<1x2x5x5xf32>, %b: tensor<2xf32>) -> tensor<1x2x5x5xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
  %y = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 4, 4, 4, 4>, dilations = array<i64: 4, 4>, group = 1 : i64, activation = "relu"} : (tensor<1x2x5x5xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x5x5xf32>
  func.return %y : tensor<1x2x5x5xf32>
}
// CHECK-LABEL: func.func @dilated_square(
// CHECK-COUNT-3: graph.conv({{.*}}, %b) {{.*}}activation = "relu"{{.*}} -> tensor<1x2x1x{{[13]}}xf32>
// CHECK:         %[[TOP:.*]] = graph.concat({{.*}}) {axis = 3 : i64} : ({{.*}}) -> tensor<1x2x1x5xf32>
// CHECK-COUNT-3: graph.conv({{.*}}, %b) {{.*}}activation = "relu"{{.*}} -> tensor<1x2x3x{{[13]}}xf32>
// CHECK:         %[[MIDDLE:.*]] = graph.concat({{.*}}) {axis = 3 : i64} : ({{.*}}) -> tensor<1x2x3x5xf32>
// CHECK-COUNT-3: graph.conv({{.*}}, %b) {{.*}}activation = "relu"{{.*}} -> tensor<1x2x1x{{[13]}}xf32>
// CHECK:         %[[BOTTOM:.*]] = graph.concat({{.*}}) {axis = 3 : i64} : ({{.*}}) -> tensor<1x2x1x5xf32>
// CHECK-NEXT:    %[[OUT:.*]] = graph.concat(%[[TOP]], %[[MIDDLE]], %[[BOTTOM]]) {axis = 2 : i64} : ({{.*}}) -> tensor<1x2x5x5xf32>
// CHECK-NEXT:    func.return %[[OUT]]

// -----

// Negative: a 3x3 conv with pads 1 on an 8x8 map has live taps for almost all of its work.
func.func @ordinary(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
  %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x8x8xf32>
  func.return %y : tensor<1x2x8x8xf32>
}
// CHECK-LABEL: func.func @ordinary(
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.conv(%x, %w)
// CHECK-NEXT:    func.return %y

// -----

// Negative: a depthwise conv (group = C = M) whose live work is a small share (a 3x3 with
// dilation 4 and pads 4 on a 5x5 map) is left whole: its kernel skips dead taps itself.
func.func @depthwise(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x1x3x3xf32>} : tensor<2x1x3x3xf32>
  %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 4, 4, 4, 4>, dilations = array<i64: 4, 4>, group = 2 : i64} : (tensor<1x2x5x5xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x5x5xf32>
  func.return %y : tensor<1x2x5x5xf32>
}
// CHECK-LABEL: func.func @depthwise(
// CHECK-NEXT:    %w = graph.constant
// CHECK-NEXT:    %y = graph.conv(%x, %w)
// CHECK-NEXT:    func.return %y
