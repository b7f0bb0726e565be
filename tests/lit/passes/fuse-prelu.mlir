// RUN: onnxc-opt %s -p fuse-prelu --split-input-file | filecheck %s

// ONNX PRelu as the importer decomposes it: relu(x) + slope * min(x, 0), per channel.
func.func @imported_prelu(%x: tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32> {
  %zero = graph.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
  %slope = graph.constant {value = dense<[[[0.1]], [[0.2]], [[0.3]]]> : tensor<3x1x1xf32>} : tensor<3x1x1xf32>
  %r = graph.relu(%x) : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %m = graph.min(%x, %zero) : (tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %n = graph.mul(%m, %slope) : (tensor<1x3x2x2xf32>, tensor<3x1x1xf32>) -> tensor<1x3x2x2xf32>
  %y = graph.add(%r, %n) : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return %y : tensor<1x3x2x2xf32>
}
// CHECK-LABEL: func.func @imported_prelu(
// CHECK:         %{{.*}} = graph.prelu(%x, %slope) : (tensor<1x3x2x2xf32>, tensor<3x1x1xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    func.return

// -----

// Keras-style: relu(x) - alpha * relu(-x).
func.func @keras_prelu(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %alpha = graph.constant {value = dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>} : tensor<4xf32>
  %r = graph.relu(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %nx = graph.neg(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %rn = graph.relu(%nx) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %n = graph.mul(%alpha, %rn) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = graph.sub(%r, %n) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @keras_prelu(
// CHECK:         %{{.*}} = graph.prelu(%x, %alpha)
// CHECK-NEXT:    func.return

// -----

// Negative: min(x, 1) is not the negative part.
func.func @min_not_zero(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %r = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %m = graph.min(%x, %one) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %n = graph.mul(%m, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = graph.add(%r, %n) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func @min_not_zero(
// CHECK-NOT:     graph.prelu
// CHECK:         graph.add

// -----

// Negative: a slope that enlarges x by broadcasting is not a PRelu slope.
func.func @slope_broadcasts_up(%x: tensor<4xf32>, %s: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %zero = graph.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
  %r = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %m = graph.min(%x, %zero) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %n = graph.mul(%m, %s) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = graph.add(%r, %n) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @slope_broadcasts_up(
// CHECK-NOT:     graph.prelu
// CHECK:         graph.add
