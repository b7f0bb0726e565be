// RUN: onnxc-opt %s -p pad-to-input --split-input-file | filecheck %s

// A zero Pad of the spatial dimensions before a conv (or an AveragePool that counts
// padding) becomes the op's own padding: no padded copy of the input.
func.func @pad_conv(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> (tensor<1x3x5x4xf32>, tensor<1x2x5x4xf32>) {
  %p = graph.pad(%x) {pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 0>, mode = "constant", value = 0.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x4xf32>
  %y = graph.conv(%p, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x6x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %q = graph.pad(%x) {pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 0>, mode = "constant", value = 0.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x4xf32>
  %a = graph.average_pool(%q) {kernel_shape = array<i64: 2, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, count_include_pad = 1 : i64} : (tensor<1x2x6x4xf32>) -> tensor<1x2x5x4xf32>
  %z = graph.conv(%p, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x6x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x4xf32>
  func.return %z, %a : tensor<1x3x5x4xf32>, tensor<1x2x5x4xf32>
}
// CHECK-LABEL: func.func @pad_conv(
// CHECK:         %a = graph.average_pool(%x) {{{.*}}pads = array<i64: 1, 0, 1, 0>
// CHECK:         %z = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 2, 1, 1, 1>
// CHECK-NOT:     graph.pad

// -----

// Non-zero padding value, reflect mode, channel padding, and a MaxPool (whose own padding
// is -inf, not 0) keep their Pad.
func.func @keep(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %v: tensor<3x4x3x3xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x2x2xf32>, tensor<1x2x6x4xf32>) {
  %p = graph.pad(%x) {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "constant", value = 1.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  %0 = graph.conv(%p, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %r = graph.pad(%x) {pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, mode = "reflect", value = 0.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  %1 = graph.conv(%r, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %c = graph.pad(%x) {pads = array<i64: 0, 1, 0, 0, 0, 1, 0, 0>, mode = "constant", value = 0.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %2 = graph.conv(%c, %v) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<3x4x3x3xf32>) -> tensor<1x3x2x2xf32>
  %m = graph.pad(%x) {pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 0>, mode = "constant", value = 0.0 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x4xf32>
  %3 = graph.max_pool(%m) {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : (tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
  func.return %0, %1, %2, %3 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x2x2xf32>, tensor<1x2x6x4xf32>
}
// CHECK-LABEL: func.func @keep(
// CHECK-COUNT-4: graph.pad
