// RUN: onnxc-opt %s -p fuse-conv-bn --split-input-file | filecheck %s

// BN after a conv with constant weights folds into the conv's weights and bias:
// s = gamma / sqrt(var + eps) = [2, 0.5]; W' = W * s; b' = (b - mean) * s + beta.
func.func @conv_bn(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = graph.constant {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %gamma = graph.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %beta = graph.constant {value = dense<[0.0, 3.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = graph.constant {value = dense<[1.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %var = graph.constant {value = dense<[1.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %c = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.batch_normalization(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_bn(
// CHECK-DAG:     %[[W:.*]] = graph.constant {value = dense<[{{\[\[\[}}2.000000e+00]]], {{\[\[\[}}1.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG:     %[[B:.*]] = graph.constant {value = dense<[0.000000e+00, 3.500000e+00]> : tensor<2xf32>}
// CHECK:         %[[Y:.*]] = graph.conv(%x, %[[W]], %[[B]])
// CHECK-NOT:     graph.batch_normalization
// CHECK:         func.return %[[Y]]

// -----

// The conv result is also returned: folding would change that output, so nothing fires.
func.func @conv_bn_shared(%x: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %p = graph.constant {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.batch_normalization(%c, %p, %p, %p, %p) {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y, %c : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_bn_shared(
// CHECK:         graph.conv
// CHECK:         graph.batch_normalization

// -----

// Non-constant BN statistics cannot be folded at compile time.
func.func @conv_bn_dynamic(%x: tensor<1x1x3x3xf32>, %m: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %p = graph.constant {value = dense<[1.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.batch_normalization(%c, %p, %p, %m, %p) {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_bn_dynamic(
// CHECK:         graph.batch_normalization
