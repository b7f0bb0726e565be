// RUN: onnxc-opt %s -p fuse-conv-mul --split-input-file | filecheck %s

// A per-channel constant multiplier after a conv scales its weights and bias.
func.func @conv_mul(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %k = graph.constant {value = dense<[[[3.0]], [[0.5]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %c = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.mul(%c, %k) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_mul(
// CHECK-DAG:     %[[W:.*]] = graph.constant {value = dense<[{{\[\[\[}}3.000000e+00]]], {{\[\[\[}}1.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG:     %[[B:.*]] = graph.constant {value = dense<[3.000000e+00, 1.000000e+00]> : tensor<2xf32>}
// CHECK:         %[[Y:.*]] = graph.conv(%x, %[[W]], %[[B]])
// CHECK-NOT:     graph.mul
// CHECK:         func.return %[[Y]]

// -----

// Multiplying by a non-constant cannot fold into the weights.
func.func @conv_mul_dynamic(%x: tensor<1x1x3x3xf32>, %s: tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.mul(%c, %s) : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_mul_dynamic(
// CHECK:         graph.mul
