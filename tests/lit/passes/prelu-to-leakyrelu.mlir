// RUN: onnxc-opt %s -p prelu-to-leakyrelu --split-input-file | filecheck %s

// PRelu with one slope value, as graph.prelu or as the importer's decomposition
// relu(x) + min(x, 0) * slope, is a LeakyRelu.
func.func @prelu(%x: tensor<1x2x2xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x2xf32>) {
  %s = graph.constant {value = dense<0.25> : tensor<2x1xf32>} : tensor<2x1xf32>
  %z = graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %0 = graph.prelu(%x, %s) : (tensor<1x2x2xf32>, tensor<2x1xf32>) -> tensor<1x2x2xf32>
  %r = graph.relu(%x) : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %n = graph.min(%x, %z) : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
  %m = graph.mul(%n, %s) : (tensor<1x2x2xf32>, tensor<2x1xf32>) -> tensor<1x2x2xf32>
  %1 = graph.add(%r, %m) : (tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  func.return %0, %1 : tensor<1x2x2xf32>, tensor<1x2x2xf32>
}
// CHECK-LABEL: func.func @prelu(
// CHECK-NEXT:    %0 = graph.leaky_relu(%x) {alpha = 2.500000e-01 : f32}
// CHECK-NEXT:    %1 = graph.leaky_relu(%x) {alpha = 2.500000e-01 : f32}
// CHECK-NEXT:    func.return %0, %1

// -----

// Per-channel slopes (two values) stay a PRelu.
func.func @prelu_channels(%x: tensor<1x2x2xf32>) -> tensor<1x2x2xf32> {
  %s = graph.constant {value = dense<[[0.25], [0.5]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %0 = graph.prelu(%x, %s) : (tensor<1x2x2xf32>, tensor<2x1xf32>) -> tensor<1x2x2xf32>
  func.return %0 : tensor<1x2x2xf32>
}
// CHECK-LABEL: func.func @prelu_channels(
// CHECK:         graph.prelu
